"""Selftest fixtures: build area."""
