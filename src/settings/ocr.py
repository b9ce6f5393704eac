"""Reading the words in pictures: the ``ocr`` stage's settings."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from cardvault.settings.declaring import read, setting
from cardvault.settings.kinds import FLAG, LANGUAGES, TEXT, WHOLE, at_most

OCR_MAX_SECONDS = 180.0  # inside the stage's own time limit (cardvault.domain.pipeline.table)


@dataclasses.dataclass(frozen=True)
class OcrSettings:
    """OCR of images, link screenshots and scanned PDF pages (the ``ocr`` stage;
    docs/files-and-capture.md, "Text in pictures")."""

    enabled: bool = setting(  # off: the ocr stage is skipped, OCR_OFF
        "CARDVAULT_OCR",
        FLAG,
        True,
        "read the words in images, link screenshots and scanned PDF pages (the `ocr` stage) where "
        "the `ocr` extra and a language file are installed; `false`: the stage is skipped "
        "(`OCR_OFF`); without the engine: `NO_OCR_ENGINE`",
    )
    languages: tuple[str, ...] = setting(
        "CARDVAULT_OCR_LANGUAGES",
        LANGUAGES,
        ("eng",),
        "the languages read, as Tesseract names them; each needs Debian's `tesseract-ocr-<name>` "
        "(languages not installed are left out; none installed: `NO_OCR_ENGINE`)",
    )
    tessdata: str | None = setting(  # None: Debian's folders (cardvault.adapters.ocr.TESSDATA_DIRS)
        "CARDVAULT_OCR_TESSDATA",
        TEXT,
        None,
        "the folder of Tesseract's `.traineddata` files (unset: Debian's "
        "`/usr/share/tesseract-ocr/5/tessdata`)",
        shown="found",
    )
    seconds: float = setting(
        "CARDVAULT_OCR_SECONDS",
        at_most(OCR_MAX_SECONDS),
        60.0,
        "one file's recognition time; past it the words read so far are kept, and the child's CPU "
        "limit (10 s more) fails the stage (`DECODE_TIMEOUT`)",
        unit="seconds",
    )
    max_pixels: int = setting(
        "CARDVAULT_OCR_MAX_PIXELS",
        WHOLE,
        12_000_000,
        "a larger picture (or PDF page at 300 dpi) is scaled down to this many pixels before it is read",
        unit="pixels",
    )
    memory_mb: int = setting(
        "CARDVAULT_OCR_MEMORY_MB",
        WHOLE,
        1024,
        "the OCR child's address space while it reads a file (at most 2048); past it the stage "
        "fails (`DECODE_FAILED`)",
        unit="MB",
    )
    min_confidence: int = setting(
        "CARDVAULT_OCR_MIN_CONFIDENCE",
        WHOLE,
        60,
        "words read with less confidence (0 to 100) are dropped, and a picture whose words average "
        "less gives no text",
        unit="percent",
    )
    pages: int = setting(
        "CARDVAULT_OCR_PAGES",
        WHOLE,
        20,
        "of a PDF, the most pages without a text layer read as pictures",
        unit="pages",
    )
    concurrency: int = setting(  # per worker process: its OCR children
        "CARDVAULT_OCR_CONCURRENCY",
        WHOLE,
        1,
        "files read at once per worker process (each in an OCR child of its own, on the `ocr` queue)",
        unit="files",
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> OcrSettings:
        values, _ = read(cls, env)
        return cls(**values)
