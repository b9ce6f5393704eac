"""The capture browser's proxy: requests go through it under the fetcher's rules. A page on an
allowed port of a vetted address is reached (plain HTTP and through CONNECT); a loopback,
private, link-local or metadata address, or a name that resolves to one, and a port not
allowed, are refused before any connection is made (a listening socket proves nothing
connected), each with the same 403 page (its reason, the fetcher's code, kept by the proxy);
the bytes from a server are capped; a malformed request is answered 400."""

from __future__ import annotations

import gc
import socket
import warnings
from collections.abc import Iterator

import httpx
import pytest

from cardvault.adapters.browser_proxy import BrowserProxy
from cardvault.adapters.fetcher import Fetcher, FetchRefused
from harness.servers import PageServer, page_server

PAGE = b"<!doctype html><title>Tides</title><p>High water twice a day.</p>"


@pytest.fixture
def pages() -> Iterator[PageServer]:
    with page_server() as server:
        server.routes["/tides"] = (200, {"Content-Type": "text/html"}, PAGE)
        server.routes["/big"] = (200, {"Content-Type": "application/octet-stream"}, b"x" * 300_000)
        yield server


def _proxy(fetcher: Fetcher, **options: int) -> BrowserProxy:
    proxy = BrowserProxy(fetcher, **options)  # type: ignore[arg-type]
    proxy.start()
    return proxy


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A loopback socket that listens and should never be connected to."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def _nothing_connected(sock: socket.socket) -> bool:
    try:
        connection, _ = sock.accept()
    except BlockingIOError:
        return True
    connection.close()
    return False


def _raw(proxy: BrowserProxy, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


def test_a_page_on_an_allowed_address_is_reached_through_the_proxy(pages: PageServer) -> None:
    proxy = _proxy(Fetcher(ports=(pages.port,), allow_loopback=True))
    try:
        with httpx.Client(proxy=proxy.url, trust_env=False) as client:
            response = client.get(pages.url("/tides"))
        assert (response.status_code, response.content) == (200, PAGE)
        assert pages.hits == {"/tides": 1}
        assert list(proxy.refused) == []
    finally:
        proxy.stop()


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "10.0.0.1",
        "169.254.169.254",
        "[64:ff9b::7f00:1]",
    ],
)
def test_a_request_for_a_refused_address_connects_nowhere(host: str, listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    proxy = _proxy(Fetcher(ports=(port,)))
    try:
        answer = _raw(proxy, f"GET http://{host}:{port}/ HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403 ")
        tunnel = _raw(proxy, f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        assert tunnel.startswith(b"HTTP/1.1 403 ")
        assert _nothing_connected(listener)
        assert [code for _, code in proxy.refused] == ["BLOCKED_ADDRESS", "BLOCKED_ADDRESS"]
    finally:
        proxy.stop()


def test_a_name_that_resolves_to_a_private_address_is_refused(listener: socket.socket) -> None:
    port = listener.getsockname()[1]
    rebinding = Fetcher(ports=(port,), resolve=lambda _host, _port: ["93.184.215.14", "127.0.0.1"])
    proxy = _proxy(rebinding)
    try:
        answer = _raw(proxy, f"CONNECT public.example:{port} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403 ")
        assert _nothing_connected(listener)
        assert [code for _, code in proxy.refused] == ["BLOCKED_ADDRESS"]
    finally:
        proxy.stop()


def _names(host: str, port: int) -> list[str]:
    if host == "private.example":
        return ["10.0.0.7"]
    if host[0].isdigit():
        return [host]
    raise FetchRefused("DNS_FAILED", f"{host} does not resolve: [Errno -2] Name or service not known")


def test_every_refusal_is_the_same_page_whatever_its_reason() -> None:
    # The page is drawn into the capture: a reason would tell a private name from one that does
    # not resolve, so which internal names exist.
    proxy = _proxy(Fetcher(ports=(80,), resolve=_names))
    try:
        answers = {
            target: (
                _raw(proxy, f"GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\n\r\n".encode()),
                _raw(proxy, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode()),
            )
            for target in ("private.example:80", "missing.example:80", "10.0.0.1:80", "private.example:81")
        }
        assert {answer for pair in answers.values() for answer in pair} == {answers["10.0.0.1:80"][0]}
        assert answers["10.0.0.1:80"][0].startswith(b"HTTP/1.1 403 ")
        codes = {target: code for target, code in proxy.refused}
        assert codes == {
            "private.example:80": "BLOCKED_ADDRESS",
            "missing.example:80": "DNS_FAILED",
            "10.0.0.1:80": "BLOCKED_ADDRESS",
            "private.example:81": "BAD_URL",
        }
    finally:
        proxy.stop()


def test_a_port_not_allowed_is_refused(pages: PageServer) -> None:
    proxy = _proxy(Fetcher(ports=(80, 443), allow_loopback=True))
    try:
        answer = _raw(proxy, f"GET {pages.url('/tides')} HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403 ")
        assert pages.hits == {}
        assert [code for _, code in proxy.refused] == ["BAD_URL"]
    finally:
        proxy.stop()


def test_a_tunnel_reaches_an_allowed_address_and_carries_the_bytes(pages: PageServer) -> None:
    proxy = _proxy(Fetcher(ports=(pages.port,), allow_loopback=True))
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
            sock.sendall(f"CONNECT 127.0.0.1:{pages.port} HTTP/1.1\r\n\r\n".encode())
            assert sock.recv(1024).startswith(b"HTTP/1.1 200 ")
            sock.sendall(
                f"GET /tides HTTP/1.1\r\nHost: 127.0.0.1:{pages.port}\r\nConnection: close\r\n\r\n".encode()
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.0 200 ") and answer.endswith(PAGE)
    finally:
        proxy.stop()


def test_the_bytes_from_a_server_are_capped(pages: PageServer) -> None:
    proxy = _proxy(Fetcher(ports=(pages.port,), allow_loopback=True), max_bytes=100_000)
    try:
        answer = _raw(proxy, f"GET {pages.url('/big')} HTTP/1.1\r\n\r\n".encode())
        assert 0 < len(answer) <= 100_000
    finally:
        proxy.stop()


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"NONSENSE\r\n\r\n",
        b"GET /relative HTTP/1.1\r\n\r\n",
        b"CONNECT nowhere HTTP/1.1\r\n\r\n",
        b"GET ftp://x/ HTTP/1.1\r\n\r\n",
    ],
)
def test_a_request_the_proxy_does_not_carry_is_answered_with_an_error(request_bytes: bytes) -> None:
    proxy = _proxy(Fetcher())
    try:
        answer = _raw(proxy, request_bytes)
        assert answer.split(b" ")[1] in (b"400", b"405")
        assert list(proxy.refused) == []
    finally:
        proxy.stop()


def test_a_request_head_over_64_kib_is_refused() -> None:
    proxy = _proxy(Fetcher())
    try:
        answer = _raw(proxy, b"GET http://example.com/ HTTP/1.1\r\nX-Filler: " + b"a" * 70_000 + b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400 ")
    finally:
        proxy.stop()


def test_stopping_ends_every_open_connection_so_none_is_left_half_closed(pages: PageServer) -> None:
    """A proxy stopped while a browser's tunnel and a ledger are open closes them itself: nothing
    is left for the garbage collector to find unclosed (a ResourceWarning there fails whichever
    test happens to be running)."""
    proxy = _proxy(Fetcher(ports=(pages.port,), allow_loopback=True))
    ledger = proxy.open_ledger()
    with socket.create_connection(("127.0.0.1", ledger.port), timeout=10) as sock:
        sock.sendall(f"CONNECT 127.0.0.1:{pages.port} HTTP/1.1\r\n\r\n".encode())
        assert sock.recv(1024).startswith(b"HTTP/1.1 200 ")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            proxy.stop()
            gc.collect()
        assert sock.recv(1024) == b""  # the tunnel was ended, not left waiting for its idle time
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
