"""Time as the API states it: integer milliseconds since the Unix epoch."""

import time


def now_ms() -> int:
    """Return the current time in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000
