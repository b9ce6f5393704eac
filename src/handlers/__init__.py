"""The HTTP edge: Connexion routes each /v1 operation in openapi/cardvault.yaml to a function here."""
