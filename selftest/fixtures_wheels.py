"""Selftest fixtures: wheels area."""
