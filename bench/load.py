"""A small HTTP/1.1 keep-alive load generator on asyncio: fixed connections, fixed duration."""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import time


@dataclasses.dataclass(frozen=True)
class LoadResult:
    requests: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


async def read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    return status


async def _connection(
    host: str, port: int, request: bytes, until: float, latencies: list[float], counts: list[int]
) -> None:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.perf_counter() < until:
            started = time.perf_counter()
            writer.write(request)
            status = await read_response(reader)
            latencies.append(time.perf_counter() - started)
            counts[0 if status == 200 else 1] += 1
    finally:
        writer.close()


async def _run(
    host: str, port: int, path: str, headers: dict[str, str], connections: int, seconds: float
) -> LoadResult:
    lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", *(f"{k}: {v}" for k, v in headers.items())]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode()
    latencies: list[float] = []
    counts = [0, 0]
    started = time.perf_counter()
    until = started + seconds
    await asyncio.gather(
        *(_connection(host, port, request, until, latencies, counts) for _ in range(connections))
    )
    elapsed = time.perf_counter() - started
    quantiles = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else [0.0] * 99
    return LoadResult(counts[0], counts[1], elapsed, quantiles[49] * 1000, quantiles[98] * 1000)


def run_load(
    host: str, port: int, path: str, headers: dict[str, str], *, connections: int = 16, seconds: float = 8.0
) -> LoadResult:
    """Send GET requests over keep-alive connections for a while; count successes and latencies."""
    return asyncio.run(_run(host, port, path, headers, connections, seconds))
