"""Tests of reliabench.run (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
