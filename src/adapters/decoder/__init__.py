"""The decoder: untrusted files decoded where they cannot hurt. A ``Decoder`` keeps one child
process (cardvault.adapters.decoder.child) that runs the jobs of its table
(cardvault.adapters.decoder.jobs) one at a time, with a memory and CPU limit, which a hostile
file can only crash or stall; the caller gets a clear error code (an ImageRefused, whatever the
job) and a fresh child for the next file.

``renditions(path)`` makes an image's renditions (cardvault.adapters.images); ``media(path,
...)`` runs cardvault.adapters.media in the same child: audio, video and documents;
``captions(path, ...)`` reads a caption file's cues. ``speech(path, ...)`` runs speech
recognition (cardvault.adapters.speech), in a Decoder of its own: a child that keeps the model,
with 15 minutes of wall time and 30 of CPU (two threads) for each file. ``ocr(path, ...)`` reads
the words in a picture or a scanned PDF (cardvault.adapters.ocr), in Decoders of their own too
(the OCR children keep the engine loaded), with the memory and time its request gives.

Limits: the child has 2 GiB of address space and 60 s of CPU for each image (90 s for another
file), and the caller waits at most ``TIMEOUT_SECONDS`` (``MEDIA_TIMEOUT_SECONDS``). The child
starts with an empty environment (CHILD_ENVIRONMENT: none of the parent's secrets) and sandboxes
itself (cardvault.adapters.decoder.child: no network, no process, nothing written); what it
answers is read within MAX_HEAD_BYTES, MAX_PARTS and MAX_PART_BYTES."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import weakref
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from cardvault.adapters import metrics
from cardvault.adapters.images import ImageRefused, Renditions

log = logging.getLogger("cardvault.decoder")

TIMEOUT_SECONDS = 30.0
MEDIA_TIMEOUT_SECONDS = 90.0  # an audio, video or document file (cardvault.adapters.media)
MEDIA_CPU_SECONDS = 90
SPEECH_TIMEOUT_SECONDS = 900.0  # 30 minutes of sound take about 5 on two cores
SPEECH_CPU_SECONDS = 1800
START_SECONDS = 30.0  # for a new child to sandbox itself and say so
# What a child's answer may hold: its JSON head (a transcript is at most 100,000 characters),
# how many byte parts follow, and each part (a rendition, a poster, a scrub strip, a page).
MAX_HEAD_BYTES = 4 * 1024 * 1024
MAX_PARTS = 8
MAX_PART_BYTES = 32 * 1024 * 1024
# All a child's environment: no secret key, database URL, storage keys or AI key of the parent.
CHILD_ENVIRONMENT = {"PATH": os.defpath, "LANG": "C.UTF-8", "HF_HUB_OFFLINE": "1"}
CHILD_PROGRAM = ("-I", "-B", "-m", "cardvault.adapters.decoder.child")  # given its socket's fd
_told: set[str] = set()  # the sandboxes logged once each


_peak_lock = threading.Lock()
_peak_bytes = 0  # the most memory any decoder child of this process has held


def _peak(held: int) -> None:
    global _peak_bytes
    with _peak_lock:
        if held > _peak_bytes:
            _peak_bytes = held
            metrics.DECODER_PEAK_MEMORY.set(held)


def _end(child: subprocess.Popen[bytes] | None, connection: Connection | None) -> None:
    """Kill a child (if it still runs) and wait for it; close its connection."""
    if child is not None and child.poll() is None:
        child.kill()
        child.wait(5)
    if connection is not None and not connection.closed:
        connection.close()


class Decoder:
    """One child process that decodes one image at a time (callers queue on a lock); it is
    started on first use and replaced after a timeout or a crash."""

    def __init__(
        self,
        timeout: float = TIMEOUT_SECONDS,
        wait: float | None = None,
        program: tuple[str, ...] = CHILD_PROGRAM,
        environment: dict[str, str] | None = None,
    ) -> None:
        self.timeout = timeout
        self.wait = wait  # how long a caller waits for the decoder (None: as long as it takes)
        self.program = program  # the child's arguments to Python
        # What the child's environment holds beside CHILD_ENVIRONMENT (never a secret).
        self.environment = {**CHILD_ENVIRONMENT, **(environment or {})}
        self._lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None

    def renditions(self, path: Path, *, large: bool = False) -> Renditions:
        """Renditions of the image at ``path``; ImageRefused with DECODE_BUSY when other
        files held the decoder longer than ``wait``."""
        head, parts = self.call({"job": "image", "path": str(path), "large": large})
        return Renditions(
            int(head["width"]),
            int(head["height"]),
            bool(head["animated"]),
            parts[0],
            parts[1],
            parts[2] if large else None,
            tuple(str(c) for c in head.get("colors", ())),
        )

    def media(
        self, path: Path, *, file_kind: str, mime_type: str, subtitles: bool = False
    ) -> tuple[dict[str, Any], list[bytes]]:
        """The facts and pictures of an audio, video or document file
        (cardvault.adapters.media), or with ``subtitles`` the text of its subtitle track;
        ImageRefused with the file's code when it cannot be read."""
        request = {
            "job": "media",
            "path": str(path),
            "file_kind": file_kind,
            "mime_type": mime_type,
            "subtitles": subtitles,
            "cpu": MEDIA_CPU_SECONDS,
        }
        return self.call(request, timeout=MEDIA_TIMEOUT_SECONDS)

    def captions(self, path: Path, *, caption_format: str) -> dict[str, Any]:
        """The text of a WebVTT (``vtt``) or SubRip (``srt``) caption file and how many cues
        have text (cardvault.adapters.media.subtitles.captions); ImageRefused with
        CAPTIONS_UNREADABLE when it cannot be read."""
        head, _ = self.call({"job": "captions", "path": str(path), "format": caption_format})
        return head

    def speech(self, path: Path, *, mime_type: str) -> dict[str, Any]:
        """The words heard in an audio or video file (cardvault.adapters.speech.transcribe);
        ImageRefused with the file's code when it cannot be read."""
        request = {"job": "speech", "path": str(path), "mime_type": mime_type, "cpu": SPEECH_CPU_SECONDS}
        head, _ = self.call(request, timeout=SPEECH_TIMEOUT_SECONDS)
        return head

    def ocr(self, path: Path, *, source: str, options: dict[str, Any]) -> dict[str, Any]:
        """The words read in an image (``source`` "image") or in a PDF's pages without a text
        layer ("pdf") by cardvault.adapters.ocr, with ``options`` (folder, languages,
        min_confidence, max_pixels, pages, seconds, memory); ImageRefused with the file's code
        when it cannot be read. The child gets ``seconds`` of CPU and the caller waits a little
        longer for what recognition read before its deadline."""
        seconds = float(options["seconds"])
        request = {"job": "ocr", "path": str(path), "source": source, **options, "cpu": int(seconds) + 10}
        head, _ = self.call(request, timeout=seconds + 15)
        return head

    def call(
        self, request: dict[str, Any], timeout: float | None = None
    ) -> tuple[dict[str, Any], list[bytes]]:
        """Send one request to the child and answer its head and parts."""
        if not self._lock.acquire(timeout=-1 if self.wait is None else self.wait):
            raise ImageRefused("DECODE_BUSY", "Other files are being decoded; try again in a moment.")
        outcome = "failed"
        try:
            answered = self._exchange(request, self.timeout if timeout is None else timeout)
            outcome = "ok"
            return answered
        except ImageRefused as refused:
            outcome = "failed" if refused.code in ("DECODE_FAILED", "DECODE_TIMEOUT") else "refused"
            raise
        finally:
            self._measure(str(request.get("job")), outcome)
            self._lock.release()

    def _measure(self, job: str, outcome: str) -> None:
        """Count the job, and note the child's peak memory."""
        metrics.DECODER_JOBS.labels(job, outcome).inc()
        self._note_peak()

    def _note_peak(self) -> None:
        """Note the child's peak memory (Linux's VmHWM) while it lives: after each job, and
        before a child that broke or ran out of time is ended (those matter most)."""
        pid = self.child_pid
        if pid is None:
            return
        with contextlib.suppress(OSError, ValueError, StopIteration):
            status = Path(f"/proc/{pid}/status").read_text()
            peak_kib = next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1]
            _peak(int(peak_kib) * 1024)

    def _exchange(self, request: dict[str, Any], timeout: float) -> tuple[dict[str, Any], list[bytes]]:
        try:
            connection = self._ensure()
            connection.send_bytes(json.dumps(request).encode())
            if not connection.poll(timeout):
                self._stop()
                raise ImageRefused("DECODE_TIMEOUT", f"Decoding took longer than {timeout:.0f} s.")
            head = json.loads(connection.recv_bytes(MAX_HEAD_BYTES))
            if "refused" in head:
                code, message = head["refused"]
                raise ImageRefused(str(code), str(message))
            count = int(head.pop("parts"))
            if not 0 <= count <= MAX_PARTS:
                raise OSError(f"the child announced {count} parts")
            parts = [connection.recv_bytes(MAX_PART_BYTES) for _ in range(count)]
        except ImageRefused:
            raise
        except (EOFError, OSError, ValueError):  # the child died (memory, CPU, a crash) or lied
            self._stop()
            raise ImageRefused("DECODE_FAILED", "The decoder stopped while reading the file.") from None
        except BaseException:  # interrupted mid-exchange: what is left in the pipe is no one's
            self._stop()
            raise
        return head, parts

    def _ensure(self) -> Connection:
        if self._child is None or self._child.poll() is not None:
            ours, theirs = socket.socketpair()
            try:
                self._child = subprocess.Popen(  # never fork a threaded process: a new interpreter
                    [sys.executable, *self.program, str(theirs.fileno())],
                    env=self.environment,
                    pass_fds=(theirs.fileno(),),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    cwd="/",
                )
            finally:
                theirs.close()
            self._connection = Connection(ours.detach())
            metrics.DECODER_STARTS.inc()
            # A decoder dropped without close() ends its child too (and waits for it).
            weakref.finalize(self, _end, self._child, self._connection)
            self._hello(self._connection)
        assert self._connection is not None
        return self._connection

    def _hello(self, connection: Connection) -> None:
        """Read how the new child sandboxed itself; log a sandbox weaker than the best once."""
        if not connection.poll(START_SECONDS):
            raise OSError("the decoder's child did not start")
        held = json.loads(connection.recv_bytes(MAX_HEAD_BYTES))
        said = f"network {held['network']}, system calls {held['system_calls']}"
        if said not in _told:
            _told.add(said)
            weak = held["network"] == "none" or held["system_calls"] != "seccomp"
            (log.warning if weak else log.info)("decoder child sandbox: %s", said)

    @property
    def child_pid(self) -> int | None:
        """The running child's process id (None before the first file, or after a crash)."""
        return None if self._child is None or self._child.poll() is not None else int(self._child.pid)

    def _stop(self) -> None:
        self._note_peak()
        _end(self._child, self._connection)
        self._child = self._connection = None

    def close(self) -> None:
        with self._lock:
            self._stop()
