"""Tests of reliabench.tasks.convert (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
