"""The decoder's child: started with nothing of the parent's environment, sandboxed (no socket, no
process, nothing written, bounded open files), and read within caps, so a child that a hostile
file took over can neither reach a secret nor flood its parent."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cardvault.adapters.decoder import CHILD_ENVIRONMENT, MAX_HEAD_BYTES, MAX_PART_BYTES, Decoder
from cardvault.adapters.images import ImageRefused
from harness.servers import IN_CI

CAPTIONS = "WEBVTT\n\n00:00:01.000 --> 00:00:02.000\nHello there\n"


@pytest.fixture
def captions(tmp_path: Path) -> Path:
    path = tmp_path / "c.vtt"
    path.write_text(CAPTIONS)
    return path


@pytest.fixture
def decoder() -> Iterator[Decoder]:
    made = Decoder()
    yield made
    made.close()


def test_the_child_holds_none_of_the_parents_environment(
    decoder: Decoder, captions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CARDVAULT_SECRET_KEY", "s" * 48)
    monkeypatch.setenv("CARDVAULT_DATABASE_URL", "postgresql+psycopg://u:password@db/cards")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "storage-secret")
    assert decoder.captions(captions, caption_format="vtt")["text"] == "Hello there"
    assert decoder.child_pid is not None
    environ = Path(f"/proc/{decoder.child_pid}/environ").read_bytes()
    held = dict(entry.split("=", 1) for entry in environ.decode().split("\0") if entry)
    assert held == CHILD_ENVIRONMENT


_TRY_EVERYTHING = textwrap.dedent(
    """
    import json, os, socket, subprocess, sys
    from cardvault.adapters.decoder.child import sandbox

    held = sandbox()
    tcp_port, unix_path, written = int(sys.argv[1]), sys.argv[2], sys.argv[3]

    def attempt(work):
        try:
            work()
        except OSError as exc:
            return type(exc).__name__
        return "done"

    def tcp():
        socket.create_connection(("127.0.0.1", tcp_port), timeout=2).close()

    def unix():
        local = socket.socket(socket.AF_UNIX)
        local.connect(unix_path)

    def write():
        with open(written, "w") as out:
            out.write("x")

    def files():
        return [open(os.devnull) for _ in range(200)]

    print(json.dumps({
        "sandbox": [held.network, held.system_calls],
        "tcp": attempt(tcp),
        "unix": attempt(unix),
        "process": attempt(lambda: subprocess.run(["/bin/true"], check=True)),
        "fork": attempt(os.fork) if hasattr(os, "fork") else "absent",
        "write": attempt(write),
        "files": attempt(files),
    }))
    """
)


def test_inside_the_sandbox_no_socket_process_or_write_gets_through(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    local = socket.socket(socket.AF_UNIX)
    local.bind(str(tmp_path / "local.sock"))
    local.listen()
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-I",
                "-c",
                _TRY_EVERYTHING,
                str(listener.getsockname()[1]),
                str(tmp_path / "local.sock"),
                str(tmp_path / "written.txt"),
            ],
            capture_output=True,
            text=True,
            env=CHILD_ENVIRONMENT,
            check=False,
        )
    finally:
        listener.close()
        local.close()
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    if IN_CI:  # CI's machine allows both; elsewhere Python's own refusals must hold as well
        assert result["sandbox"] == ["namespace", "seccomp"]
    assert result["tcp"] == "PermissionError" and result["unix"] == "PermissionError"
    assert result["process"] == "PermissionError" and result["fork"] == "PermissionError"
    assert result["write"] == "OSError"  # EFBIG: the file may be opened, nothing is written
    assert not (tmp_path / "written.txt").exists() or (tmp_path / "written.txt").stat().st_size == 0
    assert result["files"] == "OSError"  # EMFILE past the open-file limit


_LIAR = textwrap.dedent(
    """
    import json, sys
    from multiprocessing.connection import Connection
    connection = Connection(int(sys.argv[-1]))
    connection.send_bytes(json.dumps({"network": "namespace", "system_calls": "seccomp"}).encode())
    connection.recv_bytes()
    how = sys.argv[1]
    if how == "head":
        connection.send_bytes(b"[" + b" " * %(head)d + b"]")
    elif how == "parts":
        connection.send_bytes(json.dumps({"text": "", "cues": 0, "parts": 10_000}).encode())
    else:
        connection.send_bytes(json.dumps({"width": 1, "height": 1, "animated": False, "parts": 2}).encode())
        connection.send_bytes(b"x" * (%(part)d + 1))
    connection.recv_bytes()
    """
) % {"head": MAX_HEAD_BYTES, "part": MAX_PART_BYTES}


@pytest.mark.parametrize("how", ["head", "parts", "part"])
def test_an_answer_past_the_caps_is_refused_and_the_child_replaced(
    how: str, captions: Path, tmp_path: Path
) -> None:
    liar = Decoder(program=("-c", _LIAR, how))
    try:
        with pytest.raises(ImageRefused) as refused:
            liar.captions(captions, caption_format="vtt")
        assert refused.value.code == "DECODE_FAILED"
        assert liar.child_pid is None  # stopped: the next file gets a new child
    finally:
        liar.close()
