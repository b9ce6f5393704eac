"""Signing in: accounts, passwords, API keys, OAuth records, browser sessions, client secrets."""
