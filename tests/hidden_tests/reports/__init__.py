"""Tests of reliabench.hidden_tests.reports (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
