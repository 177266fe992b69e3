"""Tests of reliabench.report (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
