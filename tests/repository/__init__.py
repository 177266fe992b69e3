"""Tests of reliabench.repository (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
