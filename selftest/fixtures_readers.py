"""Selftest fixtures: readers area (wheel/ELF/fatbin readers)."""
