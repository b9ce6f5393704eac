"""What the settings read of this machine: the signing key kept in the data directory, and
whether an address is reached from this machine alone."""

from __future__ import annotations

import ipaddress
import os
import secrets
from pathlib import Path


def is_loopback(host: str) -> bool:
    """Whether an address to listen on is reached from this machine alone (any name but
    ``localhost`` may resolve to another interface, and ``0.0.0.0`` is every one)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def data_dir_secret(data_dir: Path) -> str:
    """Read the signing key kept in the data directory, creating it atomically on first use."""
    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = data_dir / f".secret_key.{secrets.token_hex(8)}"
        tmp.write_text(secrets.token_urlsafe(48))
        tmp.chmod(0o600)
        try:
            os.link(tmp, path)  # atomic: of several starting processes exactly one key wins
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text().strip()
