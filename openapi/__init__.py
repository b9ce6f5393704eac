"""The contract, installed as package data: ``cardvault.yaml`` beside this file (see pyproject.toml)."""
