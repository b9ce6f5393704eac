"""What the capture browser's processes are given of the worker's environment: nothing but a
short allowlist (PATH, a locale, the time zone, a home and temporary folder of their own), so
that the worker's secrets (the secret key, database and Redis URLs with their passwords, storage
and AI keys) are not in any process that runs a page's code, nor in the Playwright driver (a
Node.js process) that starts the browser.

Playwright's Python package starts its driver with a copy of ``os.environ`` and offers no
argument for it; ``minimal_driver`` replaces its one function that builds that copy while the
driver starts, and ``foreign_names`` reads the started driver's environment back
(``/proc/<pid>/environ``) so that a Playwright whose insides changed fails the capture rather
than lets the secrets through."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import psutil

# Copied from the worker when set: none is a secret, and each changes how a page is drawn or where
# Chromium finds its fonts.
KEPT = ("LANG", "LC_ALL", "TZ", "FONTCONFIG_FILE", "FONTCONFIG_PATH")
# What the driver adds of its own (its language binding and version).
DRIVER_PREFIX = "PW_"
# The function of playwright._impl.transport that builds the driver's environment (imported
# there by name from playwright._impl._driver, so replaced there).
DRIVER_ENVIRONMENT = "get_driver_env"
_patching = threading.Lock()


def browser_environment(home: Path, parent: Mapping[str, str] | None = None) -> dict[str, str]:
    """Chromium's whole environment: a home, temporary and XDG folders under ``home`` (a folder
    of the capture's own, so nothing is read from or left in the worker's home), and KEPT."""
    parent = os.environ if parent is None else parent
    folders = {
        "HOME": home,
        "TMPDIR": home / "tmp",
        "XDG_CONFIG_HOME": home / "config",
        "XDG_CACHE_HOME": home / "cache",
        "XDG_DATA_HOME": home / "data",
        "XDG_RUNTIME_DIR": home / "runtime",
    }
    for folder in folders.values():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return {
        "PATH": os.defpath,
        "LANG": "C.UTF-8",
        **{name: parent[name] for name in KEPT if name in parent},
        **{name: str(folder) for name, folder in folders.items()},
    }


def allowed(name: str) -> bool:
    """Whether a variable may be in the environment of the browser's or driver's processes."""
    return name in ("PATH", "HOME", "TMPDIR", *KEPT) or name.startswith(("XDG_", DRIVER_PREFIX))


@contextlib.contextmanager
def minimal_driver(environment: Mapping[str, str]) -> Iterator[None]:
    """While it lasts, a Playwright driver started in this process gets ``environment`` and
    the driver's own PW_ variables, not a copy of ``os.environ``."""
    from playwright._impl import transport

    original = getattr(transport, DRIVER_ENVIRONMENT)

    def driver_environment() -> dict[str, str]:
        own = {name: value for name, value in original().items() if name.startswith(DRIVER_PREFIX)}
        return {**environment, **own}

    with _patching:
        setattr(transport, DRIVER_ENVIRONMENT, driver_environment)
        try:
            yield
        finally:
            setattr(transport, DRIVER_ENVIRONMENT, original)


def foreign_names(drivers: list[psutil.Process]) -> set[str]:
    """The variables outside the allowlist in the environments of Playwright's ``drivers``
    (Chromium's own are not read back: it writes its process titles over them, and it is given
    its whole environment by name at its launch); those that ended meanwhile are passed over."""
    found: set[str] = set()
    for driver in drivers:
        with contextlib.suppress(psutil.Error):
            found |= {name for name in driver.environ() if not allowed(name)}
    return found
