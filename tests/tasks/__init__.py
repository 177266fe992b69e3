"""Tests of reliabench.tasks (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
