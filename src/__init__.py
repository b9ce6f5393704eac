"""Card Vault: saved items as cards, organised. Layers: handlers -> workers -> domain."""
