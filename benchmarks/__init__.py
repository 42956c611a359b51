"""Benchmarks, apart from the tests: ``make bench``. They print figures; they assert nothing."""
