"""Tests of reliabench.exporters (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
