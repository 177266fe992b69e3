"""Tests of reliabench.agents (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
