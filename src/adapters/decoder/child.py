"""The decoder's child process: started with an empty environment (no secret of the parent's),
sandboxed, then a loop that runs one job of the table at a time with only bytes and JSON
crossing its pipe.

The sandbox, set before anything reads a file (``sandbox``):
- no network: a network namespace of its own with nothing in it (as root, or in a user namespace
  of its own where the kernel allows one), and a seccomp filter (libseccomp, through pyseccomp)
  that refuses every new socket, a local one too, with EPERM;
- no process: the same filter refuses exec, fork, vfork and a clone that is not a thread;
- at most CHILD_MEMORY_BYTES of address space (less for a file whose request says so) and,
  per file, a CPU budget;
- at most CHILD_OPEN_FILES open files, and no file written (size limit 0: a write fails with
  EFBIG).
Where the kernel or libseccomp allows neither namespace nor filter, Python's own sockets, exec
and fork refuse instead (native code could still reach them); ``Sandbox`` says what held and the
parent logs a weaker sandbox once. The kernel's process limit (RLIMIT_NPROC) is not used: it
counts every thread of the user, system-wide, and does not bind root.

Run as ``python -I -B -m cardvault.adapters.decoder.child FD``: FD is its end of a socket pair."""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import json
import os
import resource
import signal
import socket
import sys
from multiprocessing.connection import Connection

CHILD_MEMORY_BYTES = 2 * 1024**3
CHILD_CPU_SECONDS = 60
CHILD_OPEN_FILES = 64
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000


_CLONE_THREAD = 0x00010000


@dataclasses.dataclass(frozen=True)
class Sandbox:
    """What held: ``network`` "namespace", "user-namespace" or "none"; ``system_calls``
    "seccomp" or "python-only"."""

    network: str
    system_calls: str


def _own_network_namespace() -> str | None:
    """Move this (single-threaded) process into a network namespace with no interface up."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) == 0:
        return "namespace"
    if libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0:
        return "user-namespace"
    return None


def _filter_system_calls() -> bool:
    """Load a seccomp filter refusing new sockets, new processes and exec; False where it
    cannot be loaded (no libseccomp, or a kernel without seccomp)."""
    try:
        import pyseccomp as seccomp

        refuse = seccomp.ERRNO(errno.EPERM)
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        for call in ("socket", "socketpair", "execve", "execveat", "fork", "vfork"):
            rules.add_rule(refuse, call)
        # A clone without CLONE_THREAD is a new process; threads go on. clone3 hides its flags
        # from the filter: refused as unknown, so the C library falls back to clone.
        rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, 0))
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        rules.load()
    except (ImportError, OSError, RuntimeError):
        return False
    return True


class _NoSocket(socket.socket):
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise PermissionError("The decoder's child opens no socket.")


def _refuse(*args: object, **kwargs: object) -> None:
    raise PermissionError("The decoder's child starts no process.")


def sandbox() -> Sandbox:
    """Cut this process off: no network, bounded memory and open files, nothing written, no
    process started. Call it first, while the process has one thread."""
    network = _own_network_namespace()
    filtered = _filter_system_calls()
    if not filtered:
        socket.socket = _NoSocket  # type: ignore[misc]
        import _posixsubprocess  # what subprocess starts a program with

        _posixsubprocess.fork_exec = _refuse  # type: ignore[assignment]
        for name in ("system", "fork", "forkpty", "execv", "execve", "posix_spawn", "posix_spawnp"):
            if hasattr(os, name):
                setattr(os, name, _refuse)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, not kills
    for limit, value in (
        (resource.RLIMIT_AS, CHILD_MEMORY_BYTES),
        (resource.RLIMIT_NOFILE, CHILD_OPEN_FILES),
        (resource.RLIMIT_FSIZE, 0),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))
    return Sandbox(network=network or "none", system_calls="seccomp" if filtered else "python-only")


def _cpu_budget(seconds: int) -> None:
    """Allow the next file this many seconds of CPU (the limit counts the child's whole life,
    so it moves on before each file)."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    spent = int(used.ru_utime + used.ru_stime) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (spent + seconds, resource.RLIM_INFINITY))


def _memory_budget(limit: int | None) -> None:
    """Hold the next file to ``limit`` bytes of address space (the soft limit, which later
    files may raise again up to CHILD_MEMORY_BYTES)."""
    soft = min(limit, CHILD_MEMORY_BYTES) if limit else CHILD_MEMORY_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (soft, CHILD_MEMORY_BYTES))


def serve(connection: Connection) -> None:
    """The child's loop: one JSON request in; out, a JSON head (the facts, and how many byte
    parts follow) and the parts. Only bytes and JSON cross the pipe (the parent never
    unpickles what a child that read a hostile file sends)."""
    from cardvault.adapters.decoder.jobs import JOBS  # after the sandbox: the libraries load here
    from cardvault.adapters.images import ImageRefused

    while True:
        try:
            request = json.loads(connection.recv_bytes())
        except EOFError:
            return
        _cpu_budget(int(request.get("cpu", CHILD_CPU_SECONDS)))
        _memory_budget(request.get("memory"))
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


def main(argv: list[str]) -> None:
    """The child's entry: sandbox itself, say how, and serve its end of the pair."""
    connection = Connection(int(argv[1]))
    held = sandbox()
    connection.send_bytes(json.dumps(dataclasses.asdict(held)).encode())
    serve(connection)


if __name__ == "__main__":
    main(sys.argv)
