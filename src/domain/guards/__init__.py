"""Guards at the HTTP edge: Idempotency-Key replays and per-account rate limits."""
