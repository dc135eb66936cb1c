"""Selftest fixtures: publish area."""
