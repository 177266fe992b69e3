"""Tests of reliabench.files (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
