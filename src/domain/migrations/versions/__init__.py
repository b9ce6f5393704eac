"""Migration scripts, applied in order."""
