"""The one way Card Vault makes an outbound HTTP request: safe against server-side request
forgery (SSRF).

- http and https only, on the allowed ports (80 and 443 unless configured), no user info;
- every address the host name resolves to must be public: loopback, private, link-local
  (cloud metadata at 169.254.169.254), shared (100.64/10), multicast, reserved, unspecified,
  and the IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96, 64:ff9b:1::/48) forms of them
  are refused, before any connection is made;
- the connection goes to the vetted address, with the original name in ``Host`` and in TLS
  SNI (and certificate checks), so a second DNS answer (rebinding) cannot move it;
- redirects are followed here, at most MAX_REDIRECTS, each hop checked again;
- one wall-clock deadline over the whole exchange (lookup, connect, TLS, request, head and
  body; every hop of a fetch, each post of a webhook): every socket operation waits at most
  what is left of it, so a server that trickles its head a byte a second, or sends
  ``100 Continue`` every second, fails at the deadline; a cap on the body, counted
  as it is decoded (gzip and deflate only, one layer), so a small compressed body cannot
  expand in memory;
- no proxy or other settings from the environment.

Off-the-shelf "safe" clients fail these rules: one takes the first public address among the
answers, another connects before it checks. ``allow_loopback`` lets the tests fetch from local
servers; it is never on by default."""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import ipaddress
import logging
import socket
import ssl
import zlib
from collections.abc import Callable, Iterator
from urllib.parse import urljoin, urlsplit

import httpcore
import httpx
from opentelemetry.trace import SpanKind

from cardvault.adapters import deadlines, tracing

# httpx logs each request at INFO: a worker's log is not the place for every page it reads.
logging.getLogger("httpx").setLevel(logging.WARNING)

MAX_REDIRECTS = 5
MAX_BYTES = 5 * 1024 * 1024
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_REDIRECTS = (301, 302, 303, 307, 308)
_ACCEPTED_ENCODINGS = "gzip, deflate"
_DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}

Resolver = Callable[[str, int], list[str]]


class FetchRefused(Exception):
    """A fetch that was refused or failed; ``code`` is stable: BAD_URL, BLOCKED_ADDRESS,
    DNS_FAILED, TOO_MANY_REDIRECTS, TOO_LARGE, FETCH_TIMEOUT or FETCH_FAILED."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclasses.dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    headers: httpx.Headers
    body: bytes


class Lookups:
    """Name lookups on a few threads of their own (the system resolver has no time limit).
    A lookup past its time is given up: still queued, it is cancelled, so a silent nameserver
    leaves no backlog behind; running, its thread is left to end. Each user (link fetches,
    webhooks, the capture proxy) has a pool of its own, so one filled does not stop another."""

    def __init__(self, threads: int = 8, name: str = "cardvault-dns") -> None:
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)

    def resolve(self, resolve: Resolver, host: str, port: int, seconds: float) -> list[str]:
        lookup = self._pool.submit(resolve, host, port)
        try:
            return lookup.result(timeout=max(0.0, seconds))
        except concurrent.futures.TimeoutError:
            lookup.cancel()
            raise FetchRefused("DNS_FAILED", f"{host} did not resolve in time.") from None


def _resolve(host: str, port: int) -> list[str]:
    try:
        answers = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise FetchRefused("DNS_FAILED", f"{host} does not resolve: {exc}") from None
    return sorted({str(answer[4][0]) for answer in answers})


def _embedded(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The IPv4 address inside an IPv4-mapped, 6to4, Teredo (its client) or NAT64 IPv6 address
    (else the address)."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
        if any(ip in network for network in _NAT64):
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip


def is_allowed(address: str, *, allow_loopback: bool = False) -> bool:
    """Whether an address (an IP address as text) is public, also inside the IPv6 forms that
    carry an IPv4 address; loopback too with ``allow_loopback``."""
    ip = _embedded(ipaddress.ip_address(address.split("%")[0]))
    if allow_loopback and ip.is_loopback:
        return True
    site_local = isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local  # fec0::/10, deprecated
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or ip.is_loopback
        or ip.is_link_local
        or site_local
    )


def _late(message: str) -> FetchRefused:
    return FetchRefused("FETCH_TIMEOUT", message)


class Fetcher:
    """Fetches one URL at a time under the rules above (thread-safe: a client per fetch)."""

    def __init__(
        self,
        *,
        ports: tuple[int, ...] = (80, 443),
        allow_loopback: bool = False,
        max_bytes: int = MAX_BYTES,
        connect_seconds: float = 3.0,
        read_seconds: float = 5.0,
        total_seconds: float = 15.0,
        resolve: Resolver = _resolve,
        tls: ssl.SSLContext | None = None,  # the tests' own authority; else the system's
        lookups: Lookups | None = None,
    ) -> None:
        self.ports = ports
        self.allow_loopback = allow_loopback
        self.max_bytes = max_bytes
        self.total_seconds = total_seconds
        self._timeout = httpx.Timeout(
            connect=connect_seconds, read=read_seconds, write=read_seconds, pool=1.0
        )
        self._resolve = resolve
        self._lookups = lookups or Lookups()
        # Built once: loading the certificate authorities costs 20 ms, a fifth of a link's work.
        self._verify = tls if tls is not None else httpx.create_ssl_context(trust_env=False)

    def _client(self, deadline: deadlines.Deadline) -> httpx.Client:
        """A client whose connections end by ``deadline``. httpx takes no network backend of
        its own, so its transport's pool is built again around ours (the one private name of
        httpx used, here alone)."""
        transport = httpx.HTTPTransport(verify=self._verify, trust_env=False)
        transport._pool = httpcore.ConnectionPool(
            ssl_context=self._verify, network_backend=deadlines.BoundedBackend(deadline)
        )
        return httpx.Client(
            transport=transport, trust_env=False, follow_redirects=False, timeout=self._timeout
        )

    def allowed(self, address: str) -> bool:
        """Whether an address may be connected to."""
        return is_allowed(address, allow_loopback=self.allow_loopback)

    def vet(
        self, host: str, port: int, *, lookups: Lookups | None = None, seconds: float | None = None
    ) -> str:
        """The address to connect to for ``host`` on ``port``: the port must be allowed and every
        address the name resolves to must be allowed; FetchRefused (BAD_URL, DNS_FAILED or
        BLOCKED_ADDRESS) otherwise. The connection must go to the address returned (pinned), not
        to the name, so that a second DNS answer cannot move it. The capture browser's proxy
        (cardvault.adapters.browser_proxy) vets its connections here too, with ``lookups`` of
        its own. The lookup has the connect time limit, or ``seconds`` when less is left."""
        if port not in self.ports:
            raise FetchRefused(
                "BAD_URL", f"Port {port} is not fetched (only {', '.join(map(str, self.ports))})."
            )
        limit = self._timeout.connect or 0.0
        if seconds is not None:
            limit = min(limit, seconds)
        addresses = (lookups or self._lookups).resolve(self._resolve, host, port, limit)
        if not addresses or not all(self.allowed(a) for a in addresses):
            raise FetchRefused("BLOCKED_ADDRESS", f"{host} resolves to an address that is not public.")
        return addresses[0]

    def _vet(self, url: str, deadline: deadlines.Deadline | None = None) -> tuple[httpx.URL, str, str]:
        """The URL to connect to (the host replaced by a vetted address), the Host header, and
        the host name for TLS; FetchRefused when the URL breaks a rule."""
        try:
            parts = urlsplit(url)
            port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
        except ValueError as exc:
            raise FetchRefused("BAD_URL", f"Not a URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise FetchRefused("BAD_URL", "Only http and https URLs with a host are fetched.")
        if parts.username is not None or parts.password is not None:
            raise FetchRefused("BAD_URL", "URLs with a user name or password are not fetched.")
        host = parts.hostname
        left = None if deadline is None else deadline.left(None, _late)
        pinned = self.vet(host, port, seconds=left)
        target = httpx.URL(url).copy_with(host=pinned)
        host_header = host if parts.port is None else f"{host}:{parts.port}"
        if ":" in host and not host.startswith("["):
            host_header = f"[{host}]" if parts.port is None else f"[{host}]:{parts.port}"
        return target, host_header, host

    def fetch(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        max_bytes: int | None = None,
        truncate: bool = False,
    ) -> Fetched:
        """GET the URL, following redirects under the same rules. A body over ``max_bytes``
        (default: the fetcher's) is refused (TOO_LARGE), or with ``truncate`` cut there (a
        page's head is at its start)."""
        with tracing.span(
            "fetch GET", SpanKind.CLIENT, **{"server.address": urlsplit(url).hostname or ""}
        ) as span:
            fetched = self._fetch(url, headers, max_bytes, truncate)
            span.set_attribute("http.response.status_code", fetched.status)
            return fetched

    def _fetch(
        self, url: str, headers: dict[str, str] | None, max_bytes: int | None, truncate: bool
    ) -> Fetched:
        cap = self.max_bytes if max_bytes is None else max_bytes
        deadline = deadlines.Deadline()
        deadline.start(self.total_seconds)  # one for every hop
        with self._client(deadline) as client:
            for _ in range(MAX_REDIRECTS + 1):
                target, host_header, host = self._vet(url, deadline)
                request = client.build_request(
                    "GET",
                    target,
                    headers={**(headers or {}), "Accept-Encoding": _ACCEPTED_ENCODINGS, "Host": host_header},
                    extensions={"sni_hostname": host} if target.scheme == "https" else {},
                )
                try:
                    response = client.send(request, stream=True)
                    try:
                        location = response.headers.get("location")
                        if response.status_code in _REDIRECTS and location:
                            url = urljoin(url, location)
                            continue
                        body = self._read(response, cap, truncate)
                    finally:
                        response.close()
                except httpx.TimeoutException:
                    raise FetchRefused("FETCH_TIMEOUT", f"{host} did not answer in time.") from None
                except httpx.HTTPError as exc:
                    raise FetchRefused("FETCH_FAILED", f"Fetching {host} failed: {exc}") from None
                return Fetched(url=url, status=response.status_code, headers=response.headers, body=body)
        raise FetchRefused("TOO_MANY_REDIRECTS", f"More than {MAX_REDIRECTS} redirects.")

    @contextlib.contextmanager
    def poster(self, url: str) -> Iterator[Callable[[bytes, dict[str, str]], Fetched]]:
        """Vet the URL once and answer a function that POSTs a body to it, each answered as it
        came: a redirect is never followed (a webhook's endpoint must answer itself). The
        connection goes to the vetted address and is kept alive between posts; each response
        body is read up to 1 KiB and cut there."""
        target, host_header, host = self._vet(url)

        def post(body: bytes, headers: dict[str, str]) -> Fetched:
            with tracing.span("fetch POST", SpanKind.CLIENT, **{"server.address": host}) as span:
                sent = send(body, headers)
                span.set_attribute("http.response.status_code", sent.status)
                return sent

        def send(body: bytes, headers: dict[str, str]) -> Fetched:
            deadline.start(self.total_seconds)  # each post has the whole time, no more
            request = client.build_request(
                "POST",
                target,
                content=body,
                headers={**headers, "Accept-Encoding": _ACCEPTED_ENCODINGS, "Host": host_header},
                extensions={"sni_hostname": host} if target.scheme == "https" else {},
            )
            try:
                response = client.send(request, stream=True)
                try:
                    read = self._read(response, 1024, truncate=True)
                finally:
                    response.close()
            except httpx.TimeoutException:
                raise FetchRefused("FETCH_TIMEOUT", f"{host} did not answer in time.") from None
            except httpx.HTTPError as exc:
                raise FetchRefused("FETCH_FAILED", f"Sending to {host} failed: {exc}") from None
            return Fetched(url=url, status=response.status_code, headers=response.headers, body=read)

        deadline = deadlines.Deadline()
        with self._client(deadline) as client:
            yield post

    def _read(self, response: httpx.Response, cap: int, truncate: bool) -> bytes:
        """The body, decoded from gzip or deflate here, never past ``cap`` bytes (a 1 kB
        compressed body can decode to gigabytes: each step decodes at most what the cap leaves)."""
        encodings = [e.strip().lower() for e in response.headers.get("content-encoding", "").split(",")]
        encodings = [e for e in encodings if e and e != "identity"]
        if len(encodings) > 1 or (encodings and encodings[0] not in _DECODERS):
            raise FetchRefused("FETCH_FAILED", f"Content-Encoding {', '.join(encodings)} is not read.")
        decoder = zlib.decompressobj(_DECODERS[encodings[0]]) if encodings else None
        chunks, size = [], 0
        for raw in response.iter_raw():  # each read ends by the deadline (deadlines.BoundedStream)
            try:
                chunk = raw if decoder is None else decoder.decompress(raw, cap - size + 1)
                while decoder is not None and decoder.unconsumed_tail and len(chunk) <= cap - size:
                    chunk += decoder.decompress(decoder.unconsumed_tail, cap - size - len(chunk) + 1)
            except zlib.error as exc:
                raise FetchRefused("FETCH_FAILED", f"The body does not decode: {exc}") from None
            size += len(chunk)
            if size > cap:
                if truncate:
                    chunks.append(chunk[: len(chunk) - (size - cap)])
                    break
                raise FetchRefused("TOO_LARGE", f"The body is over {cap} bytes.")
            chunks.append(chunk)
        return b"".join(chunks)
