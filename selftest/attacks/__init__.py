"""The attack corpus of issue 41: one small module per attack (see README.md); ``_*.py`` are helpers."""
