"""Tests of reliabench.sim (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
