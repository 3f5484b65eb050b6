"""Unit tests (see tests/__init__.py)."""
