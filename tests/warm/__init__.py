"""Tests of reliabench.warm (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
