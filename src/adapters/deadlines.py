"""One deadline over a whole outbound exchange: httpcore's sockets wrapped so that every
connect, TLS handshake, read and write waits at most what is left of it (the fetcher's)."""

from __future__ import annotations

import math
import ssl
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpcore


class Deadline:
    """When an exchange must be over (monotonic seconds); moved by each fetch or post."""

    def __init__(self) -> None:
        self.at = math.inf

    def start(self, seconds: float) -> None:
        self.at = time.monotonic() + seconds

    def left(self, timeout: float | None, late: Callable[[str], Exception]) -> float:
        """The operation's own time limit cut to what is left of the deadline; ``late`` when
        nothing is."""
        left = self.at - time.monotonic()
        if left <= 0:
            raise late("The exchange took longer than its time limit.")
        return left if timeout is None else min(timeout, left)


class BoundedStream(httpcore.NetworkStream):
    """A connection whose every read, write and TLS handshake ends by the deadline, so no
    sequence of small answers (a head a byte at a time, endless ``100 Continue``) outlasts it."""

    def __init__(self, stream: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._stream, self._deadline = stream, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, self._deadline.left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, self._deadline.left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        seconds = self._deadline.left(timeout, httpcore.ConnectTimeout)
        return BoundedStream(self._stream.start_tls(ssl_context, server_hostname, seconds), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class BoundedBackend(httpcore.NetworkBackend):
    """httpcore's sockets, every connection under the deadline."""

    def __init__(self, deadline: Deadline) -> None:
        self._sockets, self._deadline = httpcore.SyncBackend(), deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        seconds = self._deadline.left(timeout, httpcore.ConnectTimeout)
        stream = self._sockets.connect_tcp(host, port, seconds, local_address, socket_options)
        return BoundedStream(stream, self._deadline)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("Only TCP connections are made.")

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
