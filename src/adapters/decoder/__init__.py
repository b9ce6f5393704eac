"""The decoder: untrusted files decoded where they cannot hurt. A ``Decoder`` keeps one child
process (cardvault.adapters.decoder.child) that runs the jobs of its table
(cardvault.adapters.decoder.jobs) one at a time, with a memory and CPU limit, which a hostile
file can only crash or stall; the caller gets a clear error code (an ImageRefused, whatever the
job) and a fresh child for the next file.

``renditions(path)`` makes an image's renditions (cardvault.adapters.images); ``media(path,
...)`` runs cardvault.adapters.media in the same child: audio, video and documents;
``captions(path, ...)`` reads a caption file's cues. ``speech(path, ...)`` runs speech
recognition (cardvault.adapters.speech), in a Decoder of its own: a child that keeps the model,
with 15 minutes of wall time and 30 of CPU (two threads) for each file.

Limits: the child has 2 GiB of address space and 60 s of CPU for each image (90 s for another
file), and the caller waits at most ``TIMEOUT_SECONDS`` (``MEDIA_TIMEOUT_SECONDS``)."""

from __future__ import annotations

import json
import multiprocessing
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from cardvault.adapters.decoder.child import serve
from cardvault.adapters.images import ImageRefused, Renditions

TIMEOUT_SECONDS = 30.0
MEDIA_TIMEOUT_SECONDS = 90.0  # an audio, video or document file (cardvault.adapters.media)
MEDIA_CPU_SECONDS = 90
SPEECH_TIMEOUT_SECONDS = 900.0  # 30 minutes of sound take about 5 on two cores
SPEECH_CPU_SECONDS = 1800


class Decoder:
    """One child process that decodes one image at a time (callers queue on a lock); it is
    started on first use and replaced after a timeout or a crash."""

    def __init__(self, timeout: float = TIMEOUT_SECONDS, wait: float | None = None) -> None:
        self.timeout = timeout
        self.wait = wait  # how long a caller waits for the decoder (None: as long as it takes)
        self._lock = threading.Lock()
        self._child: Any = None
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

    def call(
        self, request: dict[str, Any], timeout: float | None = None
    ) -> tuple[dict[str, Any], list[bytes]]:
        """Send one request to the child and answer its head and parts."""
        if not self._lock.acquire(timeout=-1 if self.wait is None else self.wait):
            raise ImageRefused("DECODE_BUSY", "Other files are being decoded; try again in a moment.")
        try:
            return self._exchange(request, self.timeout if timeout is None else timeout)
        finally:
            self._lock.release()

    def _exchange(self, request: dict[str, Any], timeout: float) -> tuple[dict[str, Any], list[bytes]]:
        connection = self._ensure()
        try:
            connection.send_bytes(json.dumps(request).encode())
            if not connection.poll(timeout):
                self._stop()
                raise ImageRefused("DECODE_TIMEOUT", f"Decoding took longer than {timeout:.0f} s.")
            head = json.loads(connection.recv_bytes())
            if "refused" in head:
                code, message = head["refused"]
                raise ImageRefused(str(code), str(message))
            parts = [connection.recv_bytes() for _ in range(int(head.pop("parts")))]
        except ImageRefused:
            raise
        except (EOFError, OSError):  # the child died: out of memory or CPU, or a crash
            self._stop()
            raise ImageRefused("DECODE_FAILED", "The decoder stopped while reading the file.") from None
        except BaseException:  # interrupted mid-exchange: what is left in the pipe is no one's
            self._stop()
            raise
        return head, parts

    def _ensure(self) -> Connection:
        if self._child is None or not self._child.is_alive():
            context = multiprocessing.get_context("spawn")  # never fork a threaded process
            ours, theirs = context.Pipe()
            self._child = context.Process(target=serve, args=(theirs,), daemon=True, name="cardvault-decoder")
            self._child.start()
            theirs.close()
            self._connection = ours
        assert self._connection is not None
        return self._connection

    def _stop(self) -> None:
        if self._child is not None:
            self._child.kill()
            self._child.join(5)
        if self._connection is not None:
            self._connection.close()
        self._child = self._connection = None

    def close(self) -> None:
        with self._lock:
            self._stop()
