"""What a request's handler needs from its app (settings, database), bound per request."""

from __future__ import annotations

import dataclasses
from contextvars import ContextVar

from cardvault.domain.db import Database
from cardvault.settings import Settings


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The app's settings and database."""

    settings: Settings
    db: Database


_current: ContextVar[Runtime] = ContextVar("cardvault_runtime")


def bind(runtime: Runtime) -> None:
    """Make this runtime the one the current request's handlers see."""
    _current.set(runtime)


def current() -> Runtime:
    """Return the runtime of the app serving the current request."""
    return _current.get()
