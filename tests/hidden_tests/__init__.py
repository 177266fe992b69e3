"""Tests of reliabench.hidden_tests (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
