"""Audio, video and documents read where they cannot hurt: the modules of this package run in
the decoder's child process (cardvault.adapters.decoder), which has a memory and CPU limit, and
answer JSON facts and image bytes, one module a kind: audio (duration, waveform, the sound for
speech), video (poster, scrub strip), subtitles (a video's subtitle track, a caption file's
cues) and documents (PDF, office, archive, text); containers opens audio and video files. The
caller passes the type sniffed from the file's bytes; nothing here trusts a name or a declared
type. This module holds the error they all raise."""

from __future__ import annotations


class MediaRefused(Exception):
    """The file cannot be read: ``code`` is stable (MEDIA_UNREADABLE, MEDIA_TOO_LARGE,
    DOCUMENT_UNREADABLE)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
