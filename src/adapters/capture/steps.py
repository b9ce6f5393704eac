"""What one capture does, in the capture browser's thread, within its time limit:

1. a fresh context: viewport 1280 x 800, JavaScript on, downloads, service workers and
   permission prompts refused, nothing kept after it closes; a popup the page opens (by
   ``window.open`` or a link) is closed at once;
2. navigation until the response has begun (a page that never answers fails, NO_RESPONSE),
   then the ``load`` event for at most half the time left and a quiet network for at most
   SETTLE_SECONDS (a page that never finishes loading is captured as it stands);
3. the page scrolled down a screen at a time, at most ``max_height`` px and SCROLL_SECONDS,
   so lazily loaded content is drawn (an endless page stops there), then back to the top;
4. the page frozen (its timers and tasks stopped), then the first screen as WebP, the page as
   MHTML (left out above ``archive_bytes``, and not even built when the page received more
   than that through its ledger of the proxy: the archive crosses CDP whole), and the rendered
   markup (its first HTML_CHARS characters) for the reader view.

A page that crashes (it ran out of memory, say) fails with PAGE_CRASHED; one whose browser grew
past the memory limit while it ran fails with PAGE_TOO_LARGE; anything else the browser
refuses fails with CAPTURE_FAILED (retried)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
from collections.abc import Callable
from typing import Any

from cardvault.adapters.browser_proxy import Ledger
from cardvault.adapters.capture import CaptureRefused, Limits, Shot

VIEWPORT = {"width": 1280, "height": 800}
SETTLE_SECONDS = 2.0
SCROLL_SECONDS = 4.0
SCROLL_PAUSE = 0.05
HTML_CHARS = 2 * 1024 * 1024
WEBP_QUALITY = 80
MEMORY_POLL = 0.25
GONE_NOTICE = 0.2
# What the outputs take at most, kept out of the time given to loading the page.
OUTPUT_SECONDS = 8.0


class BrowserGone(Exception):
    """The browser itself went away: during the capture, or before it began (``began``
    False: the page never ran, and the capture can be made again in a new browser)."""

    def __init__(self, *, began: bool = True) -> None:
        super().__init__("the browser went away")
        self.began = began


async def capture(
    browser: Any,
    url: str,
    limits: Limits,
    memory: Callable[[], int] | None = None,
    ledger: Ledger | None = None,
) -> Shot:
    """Capture the page at ``url`` in a fresh context of ``browser``, whose requests go
    through ``ledger``'s port of the proxy when it is given."""
    from playwright.async_api import Error as PlaywrightError

    deadline = time.monotonic() + limits.seconds - min(OUTPUT_SECONDS, limits.seconds / 3)
    try:
        context = await browser.new_context(
            viewport=VIEWPORT,
            accept_downloads=False,
            service_workers="block",
            java_script_enabled=True,
            ignore_https_errors=False,
            **({"proxy": {"server": ledger.url}} if ledger else {}),
        )
    except PlaywrightError:  # (it died since the last capture; its end not yet noticed)
        raise BrowserGone(began=False) from None
    watch = asyncio.ensure_future(_watch_memory(memory, limits.memory_bytes)) if memory else None
    work: asyncio.Future[Shot] | None = None
    try:
        page = await context.new_page()
        context.on("page", lambda opened: opened is page or asyncio.ensure_future(opened.close()))
        crashed: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def on_crash(_: Any) -> None:
            if not crashed.done():
                crashed.set_result(True)

        page.on("crash", on_crash)
        work = asyncio.ensure_future(_draw_and_keep(page, url, deadline, limits, ledger))
        # Left behind by a crash, a refusal or the time limit, its own end is not news.
        work.add_done_callback(lambda done: done.cancelled() or done.exception())
        waits: list[asyncio.Future[Any]] = [work, crashed, *([watch] if watch else [])]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        if crashed.done():
            work.cancel()
            raise CaptureRefused(
                "PAGE_CRASHED", "The page crashed while it was drawn (it may have run out of memory)."
            )
        if watch is not None and watch.done():
            work.cancel()
            watch.result()  # raises PAGE_TOO_LARGE
        return await work
    except Exception as exc:
        if await _is_gone(browser):  # (what the page met was the browser's end)
            raise BrowserGone from exc
        if isinstance(exc, CaptureRefused):
            raise
        if isinstance(exc, PlaywrightError):
            raise CaptureRefused(
                "CAPTURE_FAILED",
                f"The browser could not capture the page: {_first_line(exc)}",
                transient=True,
            ) from None
        raise
    finally:
        for task in (work, watch):
            if task is not None:
                task.cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(context.close(), 5)


async def _is_gone(browser: Any) -> bool:
    """Whether the browser went away; its end takes Playwright a moment to notice."""
    if browser.is_connected():
        await asyncio.sleep(GONE_NOTICE)
    return not browser.is_connected()


async def _watch_memory(memory: Callable[[], int], limit: int) -> None:
    while True:
        await asyncio.sleep(MEMORY_POLL)
        used = await asyncio.get_running_loop().run_in_executor(None, memory)
        if used > limit:
            raise CaptureRefused(
                "PAGE_TOO_LARGE", f"The browser grew past {limit >> 20} MiB while it drew the page."
            )


async def _draw(page: Any, url: str, deadline: float, limits: Limits) -> None:
    """Navigate, wait for the page to load and settle, and scroll through it."""
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    left = max(1.0, deadline - time.monotonic())
    try:
        response = await page.goto(url, wait_until="commit", timeout=left * 1000)
    except PlaywrightTimeout:
        raise CaptureRefused("NO_RESPONSE", "The page did not answer in time.", transient=True) from None
    except PlaywrightError as exc:
        raise CaptureRefused(
            "NAVIGATION_FAILED", f"The page could not be opened: {_first_line(exc)}"
        ) from None
    if response is not None and response.status >= 400:
        raise CaptureRefused(
            "HTTP_ERROR", f"The page answered {response.status}.", transient=response.status >= 500
        )
    for state, seconds in (("load", (deadline - time.monotonic()) / 2), ("networkidle", SETTLE_SECONDS)):
        with contextlib.suppress(PlaywrightTimeout):
            await page.wait_for_load_state(
                state, timeout=max(0.1, min(seconds, deadline - time.monotonic())) * 1000
            )
    await _scroll(page, min(SCROLL_SECONDS, max(0.0, deadline - time.monotonic())), limits.max_height)


async def _scroll(page: Any, seconds: float, max_height: int) -> None:
    """Scroll down a screen at a time (lazy content draws), then back to the top."""
    stop = time.monotonic() + seconds
    y = 0
    with contextlib.suppress(Exception):  # (a page that navigated away meanwhile is shot as it is)
        while time.monotonic() < stop and y < max_height:
            height = await page.evaluate(
                "document.scrollingElement ? document.scrollingElement.scrollHeight : 0"
            )
            if y + VIEWPORT["height"] >= min(height, max_height):
                break
            y += VIEWPORT["height"]
            await page.evaluate(f"window.scrollTo(0, {y})")
            await asyncio.sleep(SCROLL_PAUSE)
        await page.evaluate("window.scrollTo(0, 0)")
        await asyncio.sleep(SCROLL_PAUSE)


async def _draw_and_keep(page: Any, url: str, deadline: float, limits: Limits, ledger: Ledger | None) -> Shot:
    await _draw(page, url, deadline, limits)
    return await _outputs(page, limits, ledger)


async def _outputs(page: Any, limits: Limits, ledger: Ledger | None) -> Shot:
    """The first screen, the archive and the rendered markup, of the page frozen as it stands
    (its timers and tasks stopped: what it draws or allocates after this is not waited for)."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
    picture = await cdp.send(
        "Page.captureScreenshot",
        {"format": "webp", "quality": WEBP_QUALITY, "captureBeyondViewport": False, "fromSurface": True},
    )
    archive: bytes | None = None
    omitted: str | None = None
    if ledger is not None and ledger.received > limits.archive_bytes:
        omitted = "ARCHIVE_TOO_LARGE"  # (what it loaded would be in it: not built)
    else:
        snapshot = await cdp.send("Page.captureSnapshot", {"format": "mhtml"})
        data = snapshot["data"].encode("utf-8", "surrogateescape")
        if len(data) > limits.archive_bytes:
            omitted = "ARCHIVE_TOO_LARGE"
        else:
            archive = data
    # page.content() and page.title() run in Playwright's utility world, out of the page's
    # reach (a page can redefine what its own scripts call); cut here, not by the page.
    html = await page.content()
    html = html[:HTML_CHARS] if isinstance(html, str) else ""
    return Shot(
        final_url=page.url,
        title=(await page.title())[:1000],
        screenshot=base64.b64decode(picture["data"]),
        archive=archive,
        archive_omitted=omitted,
        html=html,
        refused=(),
    )


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
