"""Tests of reliabench.importers (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
