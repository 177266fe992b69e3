"""Tests of reliabench.run.executors (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
