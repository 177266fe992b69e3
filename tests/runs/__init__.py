"""Tests of reliabench.runs (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
