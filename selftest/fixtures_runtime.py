"""Selftest fixtures: runtime area."""
