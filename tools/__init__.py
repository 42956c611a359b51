"""Build-time tools: nothing here ships in the runtime package."""
