"""Link capture: a web page drawn by headless Chromium (Debian's ``chromium``, driven by
Playwright's Python package through ``executable_path``; never a downloaded browser) that
reaches the web only through the capture proxy (cardvault.adapters.browser_proxy), and what it
keeps of the page: the first screen as a picture, a self-contained archive (MHTML) and the
rendered page's HTML for its reader view.

One ``CaptureBrowser`` per worker process: a thread of its own runs Playwright's asyncio API
with one browser, started on the first capture and again after it crashed or grew past its
memory limit; every capture has a fresh context (no cookies or storage kept, downloads,
service workers and permission prompts refused, popups closed) and a time limit of its own
(cardvault.adapters.capture.steps says what a capture does within it). At most
``Limits.concurrency`` captures run at once; ``capture`` waits ``wait`` seconds for a turn,
then raises CaptureBusy."""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import dataclasses
import logging
import os
import secrets
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import psutil

from cardvault.adapters.browser_proxy import BrowserProxy, chromium_arguments
from cardvault.adapters.capture import environment
from cardvault.adapters.fetcher import Fetcher

log = logging.getLogger("cardvault.capture")
BROWSER_NAMES = ("chromium", "chromium-browser")
# Debian's /usr/bin/chromium is a shell script that adds Google's API keys, remote extensions and
# an extension folder to every start (/etc/chromium.d): with them the browser calls Google on its
# own. The program behind it is run directly where it is found.
BROWSER_PROGRAMS = ("/usr/lib/chromium/chromium", "/usr/lib/chromium-browser/chromium-browser")
JS_HEAP_MB = 512  # V8's heap per page: a page allocating more crashes alone


@dataclasses.dataclass(frozen=True)
class Limits:
    """What one capture may take."""

    seconds: float = 30.0  # navigation, settling, scrolling and the outputs together
    max_height: int = 20_000  # px scrolled to draw lazy content (an endless page stops here)
    archive_bytes: int = 25 * 1024 * 1024  # a larger archive is left out (ARCHIVE_TOO_LARGE)
    memory_bytes: int = 1024 * 1024 * 1024  # the browser's processes' own memory, then restarted
    concurrency: int = 1  # captures at once in this process


@dataclasses.dataclass(frozen=True)
class Shot:
    """What a capture took of a page: ``screenshot`` is the first screen (1280 x 800, WebP);
    ``archive`` the page as MHTML (None when left out: ``archive_omitted`` says why); ``html``
    the rendered page's markup (for its reader view); ``refused`` the requests the proxy
    refused, as (host:port, code)."""

    final_url: str
    title: str
    screenshot: bytes
    archive: bytes | None
    archive_omitted: str | None
    html: str
    refused: tuple[tuple[str, str], ...]


class CaptureRefused(Exception):
    """The page could not be captured: ``code`` says why; ``transient`` when a later attempt
    may succeed."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.transient = transient


class CaptureBusy(Exception):
    """Every capture slot of this process stayed taken for the whole wait."""


def find_browser(configured: str | None = None) -> str | None:
    """The Chromium to run: the configured path if it is a program, else the first of
    BROWSER_PROGRAMS, else the first of BROWSER_NAMES on PATH; None when there is none."""
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    programs = (path for path in BROWSER_PROGRAMS if os.access(path, os.X_OK))
    return next(programs, None) or next(
        (path for name in BROWSER_NAMES if (path := shutil.which(name))), None
    )


def playwright_installed() -> bool:
    """Whether Playwright's Python package can be imported."""
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return False
    return True


class CaptureBrowser:
    """One headless Chromium for this process, behind the capture proxy."""

    def __init__(self, *, executable: str, fetcher: Fetcher, limits: Limits, sandbox: bool) -> None:
        self.executable = executable
        self.limits = limits
        self.sandbox = sandbox
        self._fetcher = fetcher
        self._slots = threading.BoundedSemaphore(limits.concurrency)
        self._lock = threading.Lock()  # starting and stopping
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._proxy: BrowserProxy | None = None
        self._playwright: Any = None
        self._browser: Any = None
        self._marker = f"--cardvault-capture={secrets.token_hex(8)}"  # finds its process
        self._home: Path | None = None  # the browser's and driver's home, temporary folder and profile
        self.launches = 0

    def capture(self, url: str, *, wait: float) -> Shot:
        """Capture the page at ``url``; CaptureBusy when no slot came free within ``wait``
        seconds, CaptureRefused when the page could not be captured. A browser found dead
        before the page began (killed since the last capture) is started again, once."""
        from cardvault.adapters.capture import steps

        if not self._slots.acquire(timeout=wait):
            raise CaptureBusy
        try:
            # Grown over its life (Chromium starts services of its own after some minutes): a
            # page is given a fresh browser, so the limit measures the page.
            self._restart_past(self.limits.memory_bytes // 2)
            for attempt in (1, 2):
                try:
                    return self._capture(url)
                except CaptureRefused as refused:
                    if refused.code == "CAPTURE_TIMEOUT":
                        self.stop()  # a browser that ran out of time may be stuck: a new one next
                    raise
                except steps.BrowserGone as gone:
                    self.stop()
                    if gone.began or attempt == 2:
                        raise CaptureRefused(
                            "BROWSER_CRASHED", "The browser stopped during the capture.", transient=True
                        ) from None
            raise AssertionError("unreachable")
        finally:
            self._restart_past(self.limits.memory_bytes)
            self._slots.release()

    def _restart_past(self, limit: int) -> None:
        """Stop the browser (the next capture starts another) if it holds over ``limit`` bytes."""
        used = self.memory()
        if used > limit:
            log.info("the capture browser holds %d MiB; started again", used >> 20)
            self.stop()

    def _capture(self, url: str) -> Shot:
        from cardvault.adapters.capture import steps

        loop, browser, proxy = self._started()
        seen = proxy.refusals
        ledger = proxy.open_ledger()
        work = asyncio.run_coroutine_threadsafe(
            asyncio.wait_for(
                steps.capture(browser, url, self.limits, self.memory, ledger), self.limits.seconds
            ),
            loop,
        )
        try:
            shot = work.result(timeout=self.limits.seconds + 10)
        except (TimeoutError, concurrent.futures.TimeoutError):
            work.cancel()
            raise CaptureRefused(
                "CAPTURE_TIMEOUT",
                f"The page was not captured within {self.limits.seconds:g} s.",
                transient=True,
            ) from None
        finally:
            proxy.close_ledger(ledger)
        # What the page's requests met (the browser's own calls home are its, not the page's).
        new = min(proxy.refusals - seen, len(proxy.refused))
        met = list(proxy.refused)[len(proxy.refused) - new :] if new else []
        refused = tuple((target, code) for target, code in met if code != "BROWSER_SERVICE")
        return dataclasses.replace(shot, refused=refused)

    def memory(self) -> int:
        """The memory the browser's processes hold of their own (USS: what ending them would
        free; resident totals count the libraries they share once per process), together; 0
        when none runs."""
        total = 0
        for process in self._browser_processes():
            try:
                tree = [process, *process.children(recursive=True)]
                total += sum(member.memory_full_info().uss for member in tree)
            except psutil.Error:  # (it ended meanwhile)
                continue
        return total

    def _browser_processes(self) -> list[psutil.Process]:
        """This browser's main processes (found by the marker on their command line)."""
        found = []
        for process in psutil.Process().children(recursive=True):
            try:
                if self._marker in process.cmdline():
                    found.append(process)
            except psutil.Error:  # (it ended meanwhile)
                continue
        return found

    def _started(self) -> tuple[asyncio.AbstractEventLoop, Any, BrowserProxy]:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=self._loop.run_forever, name="cardvault-capture", daemon=True
                )
                self._thread.start()
                atexit.register(self.stop)
            if self._proxy is None:
                self._proxy = BrowserProxy(self._fetcher)
                self._proxy.start()
            if self._browser is None or not self._browser.is_connected():
                launch = asyncio.run_coroutine_threadsafe(self._launch(self._proxy.url), self._loop)
                try:
                    self._browser = launch.result(timeout=60)
                except Exception as exc:
                    raise CaptureRefused(
                        "BROWSER_FAILED", f"Chromium did not start: {exc}", transient=True
                    ) from None
                self.launches += 1
            return self._loop, self._browser, self._proxy

    async def _launch(self, proxy_url: str) -> Any:
        from playwright.async_api import async_playwright

        if self._home is None:
            self._home = Path(tempfile.mkdtemp(prefix="cardvault-capture-"))
        minimal = environment.browser_environment(self._home)
        if self._playwright is None:
            with environment.minimal_driver(minimal):
                self._playwright = await async_playwright().start()
        if not self.sandbox:
            log.warning(
                "the capture browser runs without its sandbox (--no-sandbox): run workers as a "
                "user other than root so that Chromium's own sandbox stays on"
            )
        browser = await self._playwright.chromium.launch(
            executable_path=self.executable,
            headless=True,
            chromium_sandbox=self.sandbox,
            env=minimal,
            args=[
                *chromium_arguments(proxy_url),
                "--deny-permission-prompts",
                "--disable-notifications",
                "--mute-audio",
                "--disable-extensions",
                f"--js-flags=--max-old-space-size={JS_HEAP_MB}",
                self._marker,
            ],
        )
        # The driver (the browser's parent) read back: a Playwright that starts it some other way
        # than environment.minimal_driver knows is refused here.
        drivers = {process.ppid() for process in self._browser_processes()}
        foreign = environment.foreign_names([psutil.Process(pid) for pid in drivers])
        if foreign:
            await browser.close()
            raise RuntimeError(f"its processes hold {', '.join(sorted(foreign))} of the worker's environment")
        return browser

    def stop(self) -> None:
        """Close the browser (the next capture starts another)."""
        with self._lock:
            browser, self._browser = self._browser, None
            if browser is not None and self._loop is not None:
                try:
                    asyncio.run_coroutine_threadsafe(browser.close(), self._loop).result(timeout=15)
                except Exception as exc:  # (gone already: nothing to close)
                    log.info("closing the capture browser: %s", exc)
            for process in self._browser_processes():
                with contextlib.suppress(psutil.Error):
                    process.kill()

    def close(self) -> None:
        """Close the browser, Playwright, the proxy and the thread."""
        self.stop()
        with self._lock:
            loop, self._loop = self._loop, None
            if loop is not None:
                if self._playwright is not None:
                    try:
                        asyncio.run_coroutine_threadsafe(self._playwright.stop(), loop).result(timeout=15)
                    except Exception as exc:  # (its driver gone already)
                        log.info("stopping Playwright: %s", exc)
                    self._playwright = None
                loop.call_soon_threadsafe(loop.stop)
                if self._thread is not None:
                    self._thread.join(10)
                loop.close()
            if self._proxy is not None:
                self._proxy.stop()
                self._proxy = None
            if self._home is not None:
                shutil.rmtree(self._home, ignore_errors=True)
                self._home = None
