"""Tests of reliabench.sandbox (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
