"""Debian's Chromium started with the capture proxy's switches (adapters/browser_proxy.py)
reaches the web only through the proxy: the page itself is shown, while what it asks of a port
that is not allowed on loopback (an image, an iframe, fetch, XHR, a WebSocket, a prefetch) never
connects (a listening socket proves it; without ``<-loopback>`` Chromium would go straight
there), and private, link-local and metadata addresses, also at the end of a redirect, are
refused by the proxy with the fetcher's code."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from playwright.sync_api import sync_playwright

from cardvault.adapters.browser_proxy import BrowserProxy, chromium_arguments
from cardvault.adapters.fetcher import Fetcher
from harness.servers import PageServer, page_server


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)
    yield sock
    sock.close()


def _page(listen: int) -> bytes:
    reach = f"127.0.0.1:{listen}"
    return f"""<!doctype html><html><head><title>Tides</title>
<link rel="prefetch" href="http://{reach}/prefetch"></head>
<body><h1 id="title">High water</h1>
<img src="http://{reach}/img"><img src="http://10.0.0.1/img"><img src="http://169.254.169.254/latest/meta-data/">
<iframe src="http://{reach}/frame"></iframe><img src="/hop">
<script>
fetch("http://{reach}/fetch").catch(() => {{}});
const xhr = new XMLHttpRequest(); xhr.open("GET", "http://{reach}/xhr"); xhr.send();
try {{ new WebSocket("ws://{reach}/socket"); }} catch (e) {{}}
document.getElementById("title").textContent = "High water, drawn by script";
</script></body></html>""".encode()


def test_the_browser_reaches_the_page_and_nothing_around_the_proxy(
    chromium_path: str, listener: socket.socket
) -> None:
    with page_server() as pages:
        pages.routes["/tides"] = (200, {"Content-Type": "text/html"}, _page(listener.getsockname()[1]))
        # A redirect from an allowed page to the IPv6 metadata address: followed, and vetted again.
        pages.routes["/hop"] = (302, {"Location": "http://[fd00:ec2::254]/latest/meta-data/"}, b"")
        proxy = BrowserProxy(Fetcher(ports=(pages.port, 80), allow_loopback=True))
        proxy.start()
        try:
            _capture(chromium_path, proxy, pages)
        finally:
            proxy.stop()
    try:
        connection, _ = listener.accept()
        connection.close()
        pytest.fail("something connected to the listener around the proxy")
    except BlockingIOError:
        pass
    refused = {target: code for target, code in proxy.refused}
    assert refused[f"127.0.0.1:{listener.getsockname()[1]}"] == "BAD_URL"  # its port is not allowed
    assert refused["10.0.0.1:80"] == "BLOCKED_ADDRESS"
    assert refused["169.254.169.254:80"] == "BLOCKED_ADDRESS"
    assert refused["fd00:ec2::254:80"] == "BLOCKED_ADDRESS"


def _capture(chromium_path: str, proxy: BrowserProxy, pages: PageServer) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path,
            args=["--no-sandbox", *chromium_arguments(proxy.url)],
            headless=True,
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 800}, service_workers="block")
            page = context.new_page()
            page.goto(pages.url("/tides"), wait_until="load", timeout=15_000)
            page.wait_for_timeout(500)  # the script's requests go out after load (a settle, as a capture's)
            assert page.text_content("#title") == "High water, drawn by script"
            assert page.screenshot()[:8] == b"\x89PNG\r\n\x1a\n"
        finally:
            browser.close()
