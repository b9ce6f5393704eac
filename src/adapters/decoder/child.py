"""The decoder's child process: its memory and CPU limits, and its loop that runs one job of the
table at a time with only bytes and JSON crossing the pipe."""

from __future__ import annotations

import json
from multiprocessing.connection import Connection

from cardvault.adapters.decoder.jobs import JOBS
from cardvault.adapters.images import ImageRefused

CHILD_MEMORY_BYTES = 2 * 1024**3
CHILD_CPU_SECONDS = 60


def _limit_child() -> None:
    import resource  # POSIX only, and only in the child

    resource.setrlimit(resource.RLIMIT_AS, (CHILD_MEMORY_BYTES, CHILD_MEMORY_BYTES))


def _cpu_budget(seconds: int) -> None:
    """Allow the next file this many seconds of CPU (the limit counts the child's whole life,
    so it moves on before each file)."""
    import resource

    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (spent + seconds, resource.RLIM_INFINITY))


def serve(connection: Connection) -> None:
    """The child's loop: one JSON request in; out, a JSON head (the facts, and how many byte
    parts follow) and the parts. Only bytes and JSON cross the pipe (the parent never
    unpickles what a child that read a hostile file sends)."""
    _limit_child()
    while True:
        try:
            request = json.loads(connection.recv_bytes())
        except EOFError:
            return
        _cpu_budget(int(request.get("cpu", CHILD_CPU_SECONDS)))
        try:
            head, parts = JOBS[request["job"]](request)
        except ImageRefused as refused:
            connection.send_bytes(json.dumps({"refused": [refused.code, str(refused)]}).encode())
            continue
        except MemoryError:
            failed = ["DECODE_FAILED", "Decoding the file ran out of memory."]
            connection.send_bytes(json.dumps({"refused": failed}).encode())
            continue
        connection.send_bytes(json.dumps({**head, "parts": len(parts)}, allow_nan=False).encode())
        for part in parts:
            connection.send_bytes(part)
