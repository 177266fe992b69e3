"""Tests of reliabench.scanners (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
