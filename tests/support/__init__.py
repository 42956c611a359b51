"""Helpers shared by the test suite (importable as ``support``)."""
