"""Hostile pages met by the capture browser (cardvault.adapters.capture), each captured within
its limits or refused with a code, and the browser still capturing the next page: an endless
page, a 50,000 px page, a page that never finishes loading, one that allocates memory until it
dies, one that downloads a file and opens popups, and pages whose requests aim at addresses the
fetcher refuses (each loopback, private, link-local and metadata form, a meta refresh, a
redirect chain, a name that resolves to a private address, and one that rebinds to one). A
listening socket proves that nothing reached around the proxy."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Iterator

import psutil
import pytest

from cardvault.adapters.capture import CaptureBrowser, CaptureRefused, Limits, find_browser
from cardvault.adapters.fetcher import Fetcher
from harness.servers import PageServer, page_server

HTML = {"Content-Type": "text/html; charset=utf-8"}
SECONDS = 8.0
HOG_SECONDS = 120.0  # (the capture limit allows up to 180)


@pytest.fixture(scope="module")
def listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    yield sock
    sock.close()


@pytest.fixture(scope="module")
def pages() -> Iterator[PageServer]:
    with page_server() as served:
        yield served


class Names:
    """The resolver the capture's fetcher uses: ``private.test`` is a private address,
    ``rebind.test`` loopback the first time and private after, other names as the system says."""

    def __init__(self) -> None:
        self.rebinds = 0

    def __call__(self, host: str, port: int) -> list[str]:
        if host == "private.test":
            return ["10.0.0.7"]
        if host == "rebind.test":
            self.rebinds += 1
            return ["127.0.0.1"] if self.rebinds == 1 else ["10.0.0.8"]
        return [info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


@pytest.fixture(scope="module")
def names() -> Names:
    return Names()


@pytest.fixture(scope="module")
def browser(chromium_path: str, pages: PageServer, names: Names) -> Iterator[CaptureBrowser]:
    fetcher = Fetcher(ports=(pages.port, 80), allow_loopback=True, resolve=names)
    executable = find_browser() or chromium_path
    made = CaptureBrowser(
        executable=executable,
        fetcher=fetcher,
        limits=Limits(seconds=SECONDS, max_height=20_000, memory_bytes=900 * 1024 * 1024),
        sandbox=False,
    )
    yield made
    made.close()


def _serve(pages: PageServer, path: str, body: str) -> str:
    pages.routes[path] = (200, HTML, body.encode())
    return pages.url(path)


def _address(target: str) -> tuple[object, int]:
    host, _, port = target.rpartition(":")
    try:
        return ipaddress.ip_address(host), int(port)
    except ValueError:
        return host, int(port)


def _nothing_connected(listener: socket.socket) -> None:
    try:
        connection, _ = listener.accept()
    except BlockingIOError:
        return
    connection.close()
    pytest.fail("something connected to the listener around the proxy")


def test_an_endless_page_is_captured_within_its_limits(browser: CaptureBrowser, pages: PageServer) -> None:
    url = _serve(
        pages,
        "/endless",
        "<title>Endless</title><body><div id=feed></div><script>"
        "function more(){for(let i=0;i<20;i++){const p=document.createElement('p');"
        "p.style.height='200px';p.textContent='item '+Math.random();feed.appendChild(p)}}"
        "more();addEventListener('scroll',more);</script></body>",
    )
    shot = browser.capture(url, wait=5)  # (within its time limit: else CAPTURE_TIMEOUT)
    assert shot.title == "Endless"
    assert shot.html.count("item ") > 100  # it grew while it was scrolled, and stopped


def test_a_50000_px_page_is_captured_by_its_first_screen(browser: CaptureBrowser, pages: PageServer) -> None:
    url = _serve(
        pages,
        "/tall",
        "<title>Tall</title><body style='margin:0'><div style='height:50000px;"
        "background:linear-gradient(red,blue)'>top</div><p>bottom</p></body>",
    )
    shot = browser.capture(url, wait=5)
    assert shot.screenshot[:4] == b"RIFF" and shot.title == "Tall"
    assert shot.archive is not None and b"bottom" in shot.archive


def test_a_page_that_never_finishes_loading_is_captured_as_it_stands(
    browser: CaptureBrowser, pages: PageServer
) -> None:
    def never() -> tuple[int, dict[str, str], bytes]:
        time.sleep(SECONDS + 5)  # an image that never arrives: the load event never fires
        return 200, {"Content-Type": "image/png"}, b""

    pages.routes["/never.png"] = never
    url = _serve(pages, "/loading", "<title>Loading</title><h1>Still loading</h1><img src='/never.png'>")
    shot = browser.capture(url, wait=5)  # (the image outlasts the time limit: not waited for)
    assert shot.title == "Loading" and "Still loading" in shot.html


def test_a_page_that_allocates_until_it_dies_fails_and_the_next_page_is_captured(
    chromium_path: str, pages: PageServer, names: Names
) -> None:
    url = _serve(
        pages,
        "/hog",
        "<title>Hog</title><script>const kept=[];"
        "setInterval(()=>{for(let i=0;i<4;i++){kept.push(new Uint8Array(32<<20).fill(7))}},20);"
        "</script>",
    )
    # A browser of its own with time to spare: what is tested is that the hog is stopped by its
    # memory, and on a loaded machine (the page fills its memory and the watch reads it on the
    # same busy cores) that can come after SECONDS, which would end it as CAPTURE_TIMEOUT instead.
    roomy = CaptureBrowser(
        executable=find_browser() or chromium_path,
        fetcher=Fetcher(ports=(pages.port,), allow_loopback=True, resolve=names),
        limits=Limits(seconds=HOG_SECONDS, memory_bytes=900 * 1024 * 1024),
        sandbox=False,
    )
    try:
        with pytest.raises(CaptureRefused) as refused:
            roomy.capture(url, wait=5)
        # Stopped by the memory watch, or by Chromium itself (its tab out of memory).
        assert refused.value.code in ("PAGE_TOO_LARGE", "PAGE_CRASHED")
        assert roomy.memory() < roomy.limits.memory_bytes
        shot = roomy.capture(_serve(pages, "/after-hog", "<title>Calm</title><p>calm</p>"), wait=5)
        assert shot.title == "Calm"
    finally:
        roomy.close()


def test_downloads_and_popups_go_nowhere(
    browser: CaptureBrowser, pages: PageServer, tmp_path: object
) -> None:
    pages.routes["/file.bin"] = (
        200,
        {"Content-Type": "application/octet-stream", "Content-Disposition": "attachment; filename=x.bin"},
        b"\0" * 1024,
    )
    _serve(pages, "/popup", "<title>Popup</title><p>popup</p>")
    url = _serve(
        pages,
        "/grabby",
        "<title>Grabby</title><a id=d href='/file.bin' download>get</a><script>"
        "document.getElementById('d').click();"
        "for(let i=0;i<5;i++){window.open('/popup?'+i)}"
        "location.href='/file.bin';</script><p>main</p>",
    )
    shot = browser.capture(url, wait=5)
    assert shot.title == "Grabby" and shot.final_url == url
    shot = browser.capture(_serve(pages, "/after-grabby", "<title>Next</title>"), wait=5)
    assert shot.title == "Next"


PRIVATE = [
    "10.0.0.1",
    "172.16.0.1",
    "192.168.1.1",
    "100.64.0.1",
    "169.254.169.254",
    "[::ffff:169.254.169.254]",
    "[64:ff9b::a9fe:a9fe]",
    "[fd00:ec2::254]",
    "[fe80::1]",
    "240.0.0.1",
]
LOOPBACK = ["127.0.0.1", "localhost", "2130706433", "0x7f000001", "127.1", "0", "[::1]", "[::ffff:7f00:1]"]


def test_no_request_of_a_page_reaches_an_address_the_fetcher_refuses(
    browser: CaptureBrowser, pages: PageServer, listener: socket.socket, names: Names
) -> None:
    listen = listener.getsockname()[1]
    loopback = [f"http://{host}:{listen}/x" for host in LOOPBACK]
    private = [f"http://{host}/x" for host in PRIVATE]
    pages.routes["/hop1"] = (302, {"Location": "/hop2"}, b"")
    pages.routes["/hop2"] = (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b"")
    _serve(pages, "/named", "<title>Named</title>")
    tags = "".join(f"<img src='{target}'>" for target in [*loopback, *private, "/hop1"])
    url = _serve(
        pages,
        "/aims",
        f"<title>Aims</title><h1>Aims</h1>{tags}"
        f"<img src='http://private.test/x'><img src='http://rebind.test:{pages.port}/named'>"
        "<script>setTimeout(()=>{const i=new Image();"
        f"i.src='http://rebind.test:{pages.port}/named?again';document.body.appendChild(i)}},300)</script>"
        "<iframe src='http://10.0.0.2/'></iframe>",
    )
    shot = browser.capture(url, wait=5)
    assert shot.title == "Aims" and "Aims" in shot.html  # the page itself is captured
    refused = {_address(target): code for target, code in shot.refused}
    for host in PRIVATE:  # (Chromium writes some forms its own way: compared as addresses)
        assert refused.get(_address(f"{host.strip('[]')}:80")) == "BLOCKED_ADDRESS", (host, refused)
    assert refused[_address(f"127.0.0.1:{listen}")] == "BAD_URL"  # its port is not fetched
    assert refused[("private.test", 80)] == "BLOCKED_ADDRESS"
    assert refused[("rebind.test", pages.port)] == "BLOCKED_ADDRESS"  # the second answer
    assert refused[_address("10.0.0.2:80")] == "BLOCKED_ADDRESS"
    _nothing_connected(listener)


def test_a_meta_refresh_to_a_private_address_goes_nowhere(
    browser: CaptureBrowser, pages: PageServer, listener: socket.socket
) -> None:
    listen = listener.getsockname()[1]
    url = _serve(
        pages,
        "/refresh",
        f"<title>Refresh</title><meta http-equiv='refresh' content='0;url=http://127.0.0.1:{listen}/'>"
        "<p>moving</p>",
    )
    try:
        shot = browser.capture(url, wait=5)
    except CaptureRefused as refused:  # the refresh's answer (the proxy's 403) is the page
        assert refused.code == "HTTP_ERROR"
    else:
        assert (f"127.0.0.1:{listen}", "BAD_URL") in shot.refused
    _nothing_connected(listener)


def _kill_browser(browser: CaptureBrowser) -> None:
    for process in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if browser._marker in process.cmdline():
                process.kill()


def test_a_browser_killed_between_or_during_captures_is_started_again(
    browser: CaptureBrowser, pages: PageServer
) -> None:
    calm = _serve(pages, "/calm", "<title>Calm</title><p>calm</p>")
    browser.capture(calm, wait=5)
    launches = browser.launches
    _kill_browser(browser)
    assert browser.capture(calm, wait=5).title == "Calm"
    assert browser.launches == launches + 1

    def slow() -> tuple[int, dict[str, str], bytes]:
        time.sleep(3)
        return 200, HTML, b"<title>Slow</title>"

    pages.routes["/slow"] = slow
    killer = threading.Timer(1.0, _kill_browser, (browser,))
    killer.start()
    with pytest.raises(CaptureRefused) as refused:
        browser.capture(pages.url("/slow"), wait=5)
    killer.join()
    assert (refused.value.code, refused.value.transient) == ("BROWSER_CRASHED", True)
    assert browser.capture(calm, wait=5).title == "Calm"
    assert browser.launches == launches + 2


def test_a_page_that_loads_more_than_the_archive_cap_is_not_archived(
    chromium_path: str, pages: PageServer, names: Names
) -> None:
    # What the page fetched is not in its archive (that alone would be small): the archive is left
    # out because the page's bytes through the proxy passed the cap, before the browser built it.
    pages.routes["/tide-data"] = (200, {"Content-Type": "application/octet-stream"}, b"\x07" * 300_000)
    loads = _serve(
        pages,
        "/loads",
        "<title>Loads</title><p id=state>loading</p><script>fetch('/tide-data').then(r=>r.arrayBuffer())"
        ".then(b=>{state.textContent='loaded '+b.byteLength})</script>",
    )
    light = _serve(pages, "/light", "<title>Light</title><p>light</p>")
    small = CaptureBrowser(
        executable=find_browser() or chromium_path,
        fetcher=Fetcher(ports=(pages.port,), allow_loopback=True, resolve=names),
        limits=Limits(seconds=SECONDS, archive_bytes=200_000),
        sandbox=False,
    )
    try:
        shot = small.capture(loads, wait=5)
        assert "loaded 300000" in shot.html  # the page had it all
        assert (shot.archive, shot.archive_omitted) == (None, "ARCHIVE_TOO_LARGE")
        kept = small.capture(light, wait=5)  # the count is the capture's own
        assert kept.archive is not None and b"light" in kept.archive and kept.archive_omitted is None
    finally:
        small.close()
