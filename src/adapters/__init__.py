"""Outside systems behind small interfaces, below the domain: each imports settings and nothing
else of ours, and no other system here (the decoder runs images, media and speech; images and
media share renditions); the import contracts in pyproject.toml hold this."""
