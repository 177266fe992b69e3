"""Tests of reliabench.metrics (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
