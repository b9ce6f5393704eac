"""The capture browser's only way out: a forward proxy on loopback that every request of the
browser goes through, under the fetcher's rules (cardvault.adapters.fetcher.Fetcher.vet, the
same checks, not a copy):

- ``CONNECT host:port`` (HTTPS, WebSocket over TLS) and absolute-form requests (``GET
  http://host/...``, plain HTTP and WebSocket) only; anything else is answered 405;
- the port must be allowed and every address the name resolves to public (IPv4-mapped and
  NAT64 forms unwrapped), checked before any connection is made; the connection then goes to
  the vetted address, so a second DNS answer cannot move it;
- the browser's own services (BROWSER_SERVICES: updates, Google sign-in) are refused by name;
- every refusal is answered with the same page (REFUSED: 403, one body, whatever the reason,
  since the answer is drawn into the screenshot and archive and a reason would tell which
  internal names exist), and remembered with the fetcher's code (``refused``), so a capture
  can say what its page tried;
- bounded: the request head at most 64 KiB, each connection's bytes from the server at most
  ``max_bytes``, and a connection idle for ``idle_seconds`` is closed;
- counted: a capture opens a Ledger (a port of its own, given to its browser context as its
  proxy), which adds up the bytes the servers sent its page, so that a capture can leave out an
  archive that would be larger than its cap before the browser builds it.

The browser is started with this proxy for every scheme and no bypass (loopback included), with
its own name resolution off, so that a page cannot reach around it. The proxy runs its own
event loop on a thread of the worker process; ``start`` returns once it listens."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import threading
from urllib.parse import urlsplit

from cardvault.adapters.fetcher import Fetcher, FetchRefused, Lookups

HEAD_BYTES = 64 * 1024
MAX_BYTES = 64 * 1024 * 1024  # from the servers, per connection
IDLE_SECONDS = 15.0
CONNECT_SECONDS = 5.0
# Chromium's own services, which it calls whatever its switches say (component and extension
# updates, Google sign-in's account list): refused by name, as BROWSER_SERVICE, so the browser
# never talks to anyone but the captured pages' servers.
BROWSER_SERVICES = frozenset(
    {
        "accounts.google.com",
        "clients2.google.com",
        "clients2.googleusercontent.com",
        "clientservices.googleapis.com",
        "content-autofill.googleapis.com",
        "optimizationguide-pa.googleapis.com",
        "safebrowsing.googleapis.com",
        "update.googleapis.com",
        "edgedl.me.gvt1.com",
        "redirector.gvt1.com",
    }
)
_HOP_BY_HOP = {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}
REFUSED = "This address is not captured."


def chromium_arguments(proxy_url: str) -> list[str]:
    """Chromium's command-line switches that leave it no way out but ``proxy_url``: every scheme
    through the proxy with no bypass (Chromium bypasses loopback by default; ``<-loopback>``
    takes that away), no name resolution of its own (every lookup fails, so nothing can be
    resolved and connected to around the proxy), no QUIC (UDP, which an HTTP proxy does not
    carry), no DNS prefetch, and WebRTC on proxied TCP only."""
    return [
        f"--proxy-server={proxy_url}",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--disable-quic",
        "--dns-prefetch-disable",
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
        "--disable-background-networking",
        # Chromium's own calls home (component updates, sign-in, sync, safe browsing lists,
        # domain reliability): none goes out through the capture's proxy.
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-client-side-phishing-detection",
        "--no-pings",
        "--no-first-run",
    ]


class Ledger:
    """One capture's share of the proxy: the port its browser context is given as its proxy,
    and the bytes the servers sent through it (``received``)."""

    def __init__(self) -> None:
        self.port = 0
        self.received = 0
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        """The ledger's proxy address, as a browser context is given it."""
        return f"http://127.0.0.1:{self.port}"


class BrowserProxy:
    """A forward proxy on 127.0.0.1 that vets every connection with ``fetcher``."""

    def __init__(
        self,
        fetcher: Fetcher,
        *,
        max_bytes: int = MAX_BYTES,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        self._fetcher = fetcher
        # Its lookups on threads of their own: a silent nameserver filling the fetcher's
        # cannot stop the browser's, nor the other way round.
        self._lookups = Lookups(name="cardvault-proxy-dns")
        self._max_bytes = max_bytes
        self._idle = idle_seconds
        self.refused: collections.deque[tuple[str, str]] = collections.deque(maxlen=256)  # (target, code)
        self.refusals = 0  # ever: ``refused`` keeps the last 256
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        # Every connection's writer (the browser's and the servers'), and every ledger's
        # listener, still open: ``stop`` ends them before the loop closes, so that none is left
        # for the garbage collector to find half closed.
        self._writers: set[asyncio.StreamWriter] = set()
        self._ledgers: set[asyncio.Server] = set()

    @property
    def url(self) -> str:
        """The proxy's address, as the browser is given it."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Listen on a free loopback port, on a thread of its own."""
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def serve() -> None:
            assert self._loop is not None
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_BYTES)
            )
            self.port = int(self._server.sockets[0].getsockname()[1])
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="cardvault-browser-proxy", daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        """Stop listening and end every connection."""
        loop, server = self._loop, self._server
        if loop is None or server is None:
            return

        async def close() -> None:
            for listening in (server, *self._ledgers):
                listening.close()
            self._ledgers.clear()
            running = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            for writer in self._writers:
                writer.transport.abort()
            self._writers.clear()
            # abort() hands each transport's end to the loop's next turn: let it run.
            await asyncio.sleep(0)

        asyncio.run_coroutine_threadsafe(close(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        loop.close()
        self._loop = self._server = None

    def open_ledger(self) -> Ledger:
        """A port of its own that proxies as this one does and counts what it received."""
        assert self._loop is not None
        ledger = Ledger()

        async def listen() -> None:
            serve = functools.partial(self._serve, ledger=ledger)
            ledger._server = await asyncio.start_server(serve, "127.0.0.1", 0, limit=HEAD_BYTES)
            self._ledgers.add(ledger._server)
            ledger.port = int(ledger._server.sockets[0].getsockname()[1])

        asyncio.run_coroutine_threadsafe(listen(), self._loop).result(10)
        return ledger

    def close_ledger(self, ledger: Ledger) -> None:
        """Stop listening on the ledger's port (its connections still open end on their own)."""
        server, ledger._server = ledger._server, None
        if server is not None and self._loop is not None and not self._loop.is_closed():

            def close() -> None:
                self._ledgers.discard(server)
                server.close()

            self._loop.call_soon_threadsafe(close)

    def _refuse(self, target: str, code: str) -> None:
        self.refused.append((target, code))
        self.refusals += 1

    async def _serve(
        self, client: asyncio.StreamReader, to_client: asyncio.StreamWriter, ledger: Ledger | None = None
    ) -> None:
        self._writers.add(to_client)
        try:
            try:
                head = await asyncio.wait_for(client.readuntil(b"\r\n\r\n"), self._idle)
            except (asyncio.LimitOverrunError, asyncio.IncompleteReadError, TimeoutError):
                await _answer(to_client, 400, "The request head is incomplete or over 64 KiB.")
                return
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                await _answer(to_client, 400, "Not an HTTP request line.")
                return
            method, target, _version = parts
            if method == "CONNECT":
                await self._tunnel(target, client, to_client, ledger)
            else:
                await self._forward(method, target, lines[1:], client, to_client, ledger)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._writers.discard(to_client)
            to_client.close()

    async def _open(
        self, host: str, port: int, to_client: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """Vet and connect to ``host``:``port``; None (and the refusal answered) when refused."""
        target = f"{host}:{port}"
        if host.lower().rstrip(".") in BROWSER_SERVICES:
            self._refuse(target, "BROWSER_SERVICE")
            await _answer(to_client, 403, REFUSED)
            return None
        try:
            vet = functools.partial(self._fetcher.vet, host, port, lookups=self._lookups)
            address = await asyncio.get_running_loop().run_in_executor(None, vet)
        except FetchRefused as refused:
            self._refuse(target, refused.code)
            await _answer(to_client, 403, REFUSED)
            return None
        try:
            opened = await asyncio.wait_for(asyncio.open_connection(address, port), CONNECT_SECONDS)
        except (OSError, TimeoutError) as exc:
            await _answer(to_client, 502, f"{target} could not be reached: {exc}")
            return None
        self._writers.add(opened[1])
        return opened

    async def _tunnel(
        self,
        target: str,
        client: asyncio.StreamReader,
        to_client: asyncio.StreamWriter,
        ledger: Ledger | None,
    ) -> None:
        host, _, port_text = target.rpartition(":")
        host = host.strip("[]")
        if not host or not port_text.isdigit():
            await _answer(to_client, 400, "CONNECT needs host:port.")
            return
        opened = await self._open(host, int(port_text), to_client)
        if opened is None:
            return
        server, to_server = opened
        try:
            to_client.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await to_client.drain()  # the browser may be gone already
        except BaseException:
            self._end(to_server)
            raise
        await self._pipe(client, to_client, server, to_server, ledger)

    async def _forward(
        self,
        method: str,
        target: str,
        headers: list[str],
        client: asyncio.StreamReader,
        to_client: asyncio.StreamWriter,
        ledger: Ledger | None,
    ) -> None:
        try:
            url = urlsplit(target)
            port = url.port or 80
        except ValueError:
            url, port = urlsplit(""), 0
        if url.scheme not in ("http", "ws") or not url.hostname:
            await _answer(to_client, 405, "Only CONNECT and absolute http:// requests are proxied.")
            return
        opened = await self._open(url.hostname, port, to_client)
        if opened is None:
            return
        server, to_server = opened
        path = url.path or "/"
        kept = [line for line in headers if line and line.split(":", 1)[0].strip().lower() not in _HOP_BY_HOP]
        upgrade = any(line.lower().startswith("upgrade:") for line in kept)
        # One request per connection: the browser opens another for the next, vetted again.
        connection = ["Connection: Upgrade"] if upgrade else ["Connection: close"]
        request_line = f"{method} {path}{'?' + url.query if url.query else ''} HTTP/1.1"
        to_server.write(("\r\n".join([request_line, *kept, *connection]) + "\r\n\r\n").encode("latin-1"))
        await self._pipe(client, to_client, server, to_server, ledger)

    async def _pipe(
        self,
        client: asyncio.StreamReader,
        to_client: asyncio.StreamWriter,
        server: asyncio.StreamReader,
        to_server: asyncio.StreamWriter,
        ledger: Ledger | None,
    ) -> None:
        """Copy both ways until either side ends or is idle, the server's bytes capped and
        counted in ``ledger``."""

        async def copy(
            source: asyncio.StreamReader, sink: asyncio.StreamWriter, cap: int | None, count: Ledger | None
        ) -> None:
            sent = 0
            while True:
                chunk = await asyncio.wait_for(source.read(65536), self._idle)
                if not chunk:
                    return
                sent += len(chunk)
                if count is not None:
                    count.received += len(chunk)
                if cap is not None and sent > cap:
                    return
                sink.write(chunk)
                await sink.drain()

        upstream = asyncio.ensure_future(copy(client, to_server, None, None))
        downstream = asyncio.ensure_future(copy(server, to_client, self._max_bytes, ledger))
        try:
            await asyncio.wait({upstream, downstream}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (upstream, downstream):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            self._end(to_server)

    def _end(self, writer: asyncio.StreamWriter) -> None:
        """Close a connection to a server, no longer one ``stop`` must end."""
        self._writers.discard(writer)
        writer.close()


async def _answer(to_client: asyncio.StreamWriter, status: int, message: str) -> None:
    reasons = {400: "Bad Request", 403: "Forbidden", 405: "Method Not Allowed", 502: "Bad Gateway"}
    body = message.encode("utf-8", "replace")
    to_client.write(
        f"HTTP/1.1 {status} {reasons[status]}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode("latin-1")
        + body
    )
    with contextlib.suppress(ConnectionError):
        await to_client.drain()
