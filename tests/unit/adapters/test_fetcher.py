"""The SSRF-safe fetcher: a corpus of request-forgery vectors, every one refused before any
connection is made, and the rules it keeps when it does fetch (from local servers, in the
test-only loopback mode)."""

from __future__ import annotations

import gzip
import socket
import ssl
import threading
import time
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest
import trustme

from cardvault.adapters.fetcher import MAX_REDIRECTS, Fetcher, FetchRefused, Lookups
from harness.servers import PageServer, page_server, trickle_server


@pytest.fixture
def server() -> Iterator[PageServer]:
    """A local HTTP server that records every request it gets."""
    with page_server() as pages:
        yield pages


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A listening TCP socket on loopback: a connection made to it waits to be accepted."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.1)
    yield sock
    sock.close()


VECTORS = [
    # loopback, in every spelling a resolver takes
    ("http://127.0.0.1:{port}/", "BLOCKED_ADDRESS"),
    ("http://localhost:{port}/", "BLOCKED_ADDRESS"),
    ("http://2130706433:{port}/", "BLOCKED_ADDRESS"),  # decimal
    ("http://0x7f000001:{port}/", "BLOCKED_ADDRESS"),  # hexadecimal
    ("http://017700000001:{port}/", "BLOCKED_ADDRESS"),  # octal
    ("http://127.1:{port}/", "BLOCKED_ADDRESS"),  # short form
    ("http://0:{port}/", "BLOCKED_ADDRESS"),  # 0.0.0.0 reaches the local host
    ("http://[::1]:{port}/", "BLOCKED_ADDRESS"),
    ("http://[::ffff:127.0.0.1]:{port}/", "BLOCKED_ADDRESS"),  # IPv4-mapped
    ("http://[::ffff:7f00:1]:{port}/", "BLOCKED_ADDRESS"),
    ("http://[64:ff9b::7f00:1]:{port}/", "BLOCKED_ADDRESS"),  # NAT64
    ("http://[0:0:0:0:0:0:0:1]:{port}/", "BLOCKED_ADDRESS"),
    # cloud metadata, private, shared and special ranges
    ("http://169.254.169.254:{port}/latest/meta-data/", "BLOCKED_ADDRESS"),
    ("http://[::ffff:169.254.169.254]:{port}/", "BLOCKED_ADDRESS"),
    ("http://[64:ff9b::a9fe:a9fe]:{port}/", "BLOCKED_ADDRESS"),
    ("http://[fd00:ec2::254]:{port}/", "BLOCKED_ADDRESS"),
    ("http://10.0.0.1:{port}/", "BLOCKED_ADDRESS"),
    ("http://172.16.0.1:{port}/", "BLOCKED_ADDRESS"),
    ("http://192.168.1.1:{port}/", "BLOCKED_ADDRESS"),
    ("http://100.64.0.1:{port}/", "BLOCKED_ADDRESS"),
    ("http://224.0.0.1:{port}/", "BLOCKED_ADDRESS"),  # multicast
    ("http://240.0.0.1:{port}/", "BLOCKED_ADDRESS"),  # reserved
    ("http://[fe80::1]:{port}/", "BLOCKED_ADDRESS"),  # link-local
    ("http://[2002:a9fe:a9fe::1]:{port}/", "BLOCKED_ADDRESS"),  # 6to4 of the metadata address
    ("http://[2002:7f00:1::1]:{port}/", "BLOCKED_ADDRESS"),  # 6to4 of loopback
    ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]:{port}/", "BLOCKED_ADDRESS"),  # Teredo of 10.0.0.1
    ("http://[fec0::1]:{port}/", "BLOCKED_ADDRESS"),  # site-local
    # user info, schemes and ports
    ("http://example.com@127.0.0.1:{port}/", "BAD_URL"),
    ("http://user:pass@localhost:{port}/", "BAD_URL"),
    ("file:///etc/passwd", "BAD_URL"),
    ("gopher://127.0.0.1:{port}/_GET", "BAD_URL"),
    ("ftp://127.0.0.1:{port}/", "BAD_URL"),
    ("http://127.0.0.1:6379/", "BAD_URL"),  # a port that is not allowed
    ("http:///nohost", "BAD_URL"),
]


@pytest.mark.parametrize(("template", "code"), VECTORS, ids=[v[0] for v in VECTORS])
def test_every_vector_is_refused_before_any_connection(
    listener: socket.socket, template: str, code: str
) -> None:
    port = listener.getsockname()[1]
    with pytest.raises(FetchRefused) as refused:
        Fetcher(ports=(80, 443, port)).fetch(template.format(port=port))
    assert refused.value.code == code
    with pytest.raises(TimeoutError):  # nothing connected to the port
        listener.accept()


def test_the_listener_sees_a_connection_when_loopback_is_allowed(listener: socket.socket) -> None:
    # The check above can fail: a fetch that connects shows as a connection waiting.
    port = listener.getsockname()[1]
    with pytest.raises(FetchRefused):
        Fetcher(ports=(port,), allow_loopback=True, read_seconds=0.2, total_seconds=1).fetch(
            f"http://127.0.0.1:{port}/"
        )
    connection, _ = listener.accept()
    connection.close()


def test_a_name_with_any_private_answer_is_refused() -> None:
    fetcher = Fetcher(resolve=lambda host, port: ["93.184.215.14", "10.0.0.7"])
    with pytest.raises(FetchRefused) as refused:
        fetcher.fetch("http://mixed.example/")
    assert refused.value.code == "BLOCKED_ADDRESS"


def test_it_connects_to_the_vetted_address_with_the_name_in_host(server: PageServer) -> None:
    port = server.port
    server.routes["/page"] = (200, {"Content-Type": "text/html"}, b"<title>hi</title>")
    answers: list[str] = []

    def rebinding(host: str, _port: int) -> list[str]:  # a second lookup would say otherwise
        answers.append(host)
        return ["127.0.0.1"] if len(answers) == 1 else ["10.0.0.1"]

    fetched = Fetcher(ports=(port,), allow_loopback=True, resolve=rebinding).fetch(
        f"http://card.test:{port}/page"
    )
    assert (fetched.status, fetched.body) == (200, b"<title>hi</title>")
    assert server.seen[-1]["Host"] == f"card.test:{port}"
    assert answers == ["card.test"]  # resolved once, then pinned


def test_redirects_are_checked_at_every_hop(server: PageServer) -> None:
    port = server.port
    server.routes["/to-metadata"] = (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b"")
    server.routes["/to-private"] = (301, {"Location": "http://10.0.0.1/"}, b"")
    server.routes["/hop"] = (307, {"Location": "/final"}, b"")
    server.routes["/final"] = (200, {}, b"done")
    server.routes["/loop"] = (302, {"Location": "/loop"}, b"")
    fetcher = Fetcher(ports=(80, port), allow_loopback=True)
    for path in ("/to-metadata", "/to-private"):
        with pytest.raises(FetchRefused) as refused:
            fetcher.fetch(f"http://127.0.0.1:{port}{path}")
        assert refused.value.code == "BLOCKED_ADDRESS"
    fetched = fetcher.fetch(f"http://127.0.0.1:{port}/hop")
    assert (fetched.url, fetched.body) == (f"http://127.0.0.1:{port}/final", b"done")
    before = len(server.seen)
    with pytest.raises(FetchRefused) as refused:
        fetcher.fetch(f"http://127.0.0.1:{port}/loop")
    assert refused.value.code == "TOO_MANY_REDIRECTS"
    assert len(server.seen) - before == MAX_REDIRECTS + 1


def test_a_body_over_the_cap_is_refused(server: PageServer) -> None:
    port = server.port
    server.routes["/big"] = (200, {}, b"x" * 200_000)
    with pytest.raises(FetchRefused) as refused:
        Fetcher(ports=(port,), allow_loopback=True, max_bytes=100_000).fetch(f"http://127.0.0.1:{port}/big")
    assert refused.value.code == "TOO_LARGE"


def test_loopback_is_refused_unless_the_test_mode_allows_it() -> None:
    assert not Fetcher().allowed("127.0.0.1")
    assert Fetcher(allow_loopback=True).allowed("127.0.0.1")
    assert not Fetcher(allow_loopback=True).allowed("10.0.0.1")  # loopback only, never private
    assert Fetcher().allowed("93.184.215.14")


@pytest.fixture
def tls_server() -> Iterator[tuple[int, trustme.CA]]:
    """A server behind TLS, with a certificate for card.test from a test authority."""
    ca = trustme.CA()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("card.test").configure_cert(context)
    with page_server(context) as pages:
        pages.routes["/"] = (200, {}, b"secure")
        yield pages.port, ca


def test_https_to_a_pinned_address_checks_the_certificate_for_the_name(
    tls_server: tuple[int, trustme.CA],
) -> None:
    port, ca = tls_server
    trust = ssl.create_default_context()
    ca.configure_trust(trust)

    fetcher = Fetcher(
        ports=(port,), allow_loopback=True, tls=trust, resolve=lambda _host, _port: ["127.0.0.1"]
    )
    assert fetcher.fetch(f"https://card.test:{port}/").body == b"secure"
    with pytest.raises(FetchRefused) as refused:  # the name TLS checks is the URL's, not the address
        fetcher.fetch(f"https://other.test:{port}/")
    assert refused.value.code == "FETCH_FAILED" and "certificate" in str(refused.value).lower()


def test_a_compressed_body_is_decoded_and_capped_as_it_decodes(server: PageServer) -> None:
    page = b"<title>zipped</title>" + b"x" * 1000
    server.routes["/gzip"] = (200, {"Content-Encoding": "gzip"}, gzip.compress(page))
    server.routes["/deflate"] = (200, {"Content-Encoding": "deflate"}, zlib.compress(page))
    bomb = gzip.compress(b"\0" * 50_000_000, compresslevel=9)  # 49 kB that decode to 50 MB
    server.routes["/bomb"] = (200, {"Content-Encoding": "gzip"}, bomb)
    server.routes["/brotli"] = (200, {"Content-Encoding": "br"}, b"\x8b\x03\x80hello\x03")
    server.routes["/twice"] = (200, {"Content-Encoding": "gzip, gzip"}, gzip.compress(gzip.compress(page)))
    fetcher = Fetcher(ports=(server.port,), allow_loopback=True, max_bytes=100_000)
    for path in ("/gzip", "/deflate"):
        assert fetcher.fetch(f"http://127.0.0.1:{server.port}{path}").body == page
    with pytest.raises(FetchRefused) as refused:
        fetcher.fetch(f"http://127.0.0.1:{server.port}/bomb")
    assert refused.value.code == "TOO_LARGE"
    tracemalloc.start()
    try:
        cut = fetcher.fetch(f"http://127.0.0.1:{server.port}/bomb", truncate=True)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cut.body == b"\0" * 100_000  # the first 100 kB
    assert peak < 5_000_000  # no more decoded than that (all 50 MB at once before)
    for path in ("/brotli", "/twice"):
        with pytest.raises(FetchRefused) as refused:
            fetcher.fetch(f"http://127.0.0.1:{server.port}{path}")
        assert refused.value.code == "FETCH_FAILED"
    assert server.seen[0]["Accept-Encoding"] == "gzip, deflate"


def test_a_name_that_does_not_resolve_in_time_is_refused_in_time() -> None:
    def hanging(_host: str, _port: int) -> list[str]:
        time.sleep(1)
        return ["10.0.0.1"]  # BLOCKED_ADDRESS, had the fetcher waited for it

    with pytest.raises(FetchRefused) as refused:
        Fetcher(connect_seconds=0.1, resolve=hanging).fetch("http://slow.example/")
    assert refused.value.code == "DNS_FAILED"


@pytest.mark.parametrize("mode", ["continue", "head"])
def test_a_server_that_trickles_its_answer_fails_at_the_deadline(mode: str) -> None:
    # 100 Continue (or one byte of the head) every 0.2 s for 8 s: each read is quick, but the
    # whole exchange has 1 s, so the fetch and the post fail and the connection is closed.
    with trickle_server(mode, every=0.2, times=40) as server:
        fetcher = Fetcher(ports=(server.port,), allow_loopback=True, total_seconds=1.0)
        with pytest.raises(FetchRefused) as fetched:
            fetcher.fetch(server.url("/page"))
        assert fetched.value.code == "FETCH_TIMEOUT"
        with fetcher.poster(server.url()) as post, pytest.raises(FetchRefused) as posted:
            post(b"{}", {"content-type": "application/json"})
        assert posted.value.code == "FETCH_TIMEOUT"
        deadline = time.monotonic() + 10
        while server.hung_up < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.hung_up == 2  # both hung up on before the trickle ended
        assert len(server.requests) == 2


def test_a_silent_nameserver_filling_one_pool_leaves_another_and_its_queue_is_cancelled() -> None:
    release, calls = threading.Event(), []

    def silent(host: str, _port: int) -> list[str]:
        calls.append(host)
        release.wait(10)
        return ["127.0.0.1"]

    fetcher = Fetcher(allow_loopback=True, connect_seconds=0.2, resolve=silent, lookups=Lookups(threads=1))
    for name in ("first.example", "queued.example"):
        with pytest.raises(FetchRefused) as refused:
            fetcher.vet(name, 80)
        assert refused.value.code == "DNS_FAILED"
    # The proxy's lookups have threads of their own: the same resolver answers there at once
    # once it answers at all, while the fetcher's one thread is still held.
    release.set()
    assert fetcher.vet("other.example", 80, lookups=Lookups(threads=1)) == "127.0.0.1"
    assert fetcher.vet("after.example", 80) == "127.0.0.1"  # queued after the one given up
    assert "queued.example" not in calls  # given up while queued: never run
