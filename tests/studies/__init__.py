"""Tests of reliabench.studies (tests/ mirrors src/reliabench/; docs/guide.md, "Where the tests are")."""
