"""One module per revision; each carries the logic it needs, frozen as it was written."""
