"""Account passwords: Argon2id hashes (RFC 9106), their parameters chosen in the settings."""

from __future__ import annotations

import dataclasses
import threading

import argon2
from argon2.exceptions import InvalidHashError, VerificationError

MIN_LENGTH = 12  # NIST SP 800-63B asks at least 8; a sign-in page alone guards these accounts
MAX_LENGTH = 1024  # long enough for any passphrase; bounds the hashing work an attacker can ask


@dataclasses.dataclass(frozen=True)
class PasswordParams:
    """Argon2id's cost: passes over memory, memory in KiB, lanes."""

    time_cost: int
    memory_kib: int
    parallelism: int


class Passwords:
    """Hash and check passwords; at most ``slots`` hashes run at once in this process, so a burst
    of sign-ins cannot take memory_kib times the thread count."""

    def __init__(self, params: PasswordParams, slots: int = 4) -> None:
        self._hasher = argon2.PasswordHasher(
            time_cost=params.time_cost,
            memory_cost=params.memory_kib,
            parallelism=params.parallelism,
            type=argon2.Type.ID,
        )
        self._slots = threading.BoundedSemaphore(slots)
        # Checked when the email names no account, so that answer takes as long as a wrong password.
        self._decoy = self._hasher.hash("decoy password, never anyone's")

    def hash(self, password: str) -> str:
        """Hash a new password."""
        with self._slots:
            return self._hasher.hash(password)

    def verify(self, stored: str | None, password: str) -> bool:
        """Whether ``password`` matches the stored hash; None (no such account, or no password)
        costs the same time and answers False."""
        with self._slots:
            try:
                return self._hasher.verify(stored or self._decoy, password) and stored is not None
            except (VerificationError, InvalidHashError):
                return False

    def needs_rehash(self, stored: str) -> bool:
        """Whether the hash was made with other parameters than the current ones."""
        return self._hasher.check_needs_rehash(stored)
