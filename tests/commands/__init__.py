"""Tests of reliabench.commands (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
