"""Reading the words in pictures (OCR), the optional ``ocr`` extra: Tesseract 5 through tesserocr
(its wheel carries libtesseract and Leptonica), with the language files of Debian's
``tesseract-ocr-<lang>`` packages (``tesseract-ocr-eng`` for English). Nothing is downloaded.

``read_image`` and ``read_pdf`` run in the OCR child process (cardvault.adapters.decoder.Decoder,
job ``ocr``, with its own memory, CPU and time limits): a picture is decoded by Pillow with the
image limits of cardvault.adapters.images, scaled down to at most ``max_pixels`` before it is
read (small glyphs of a huge picture are lost, the time stays bounded; a tall screenshot
may pass the renditions' 10,000 px a side, not their 100,000,000 pixels), and read with
Tesseract's page layout analysis, which gives blocks, paragraphs and lines in reading order. A
word whose confidence is under ``min_confidence`` (0 to 100) is dropped, and a picture whose
words average under it gives no text at all: noise read as letters is not text. Recognition
stops at its deadline and keeps the words read before it. A PDF's pages (up to ``pages``) are
read only where the page has no text layer of its own, each rendered at 300 dpi within the
pixel bound. The text kept is at most MAX_TEXT_BYTES of UTF-8."""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cardvault.adapters.images import ImageRefused

ENGINE = "tesseract"
MAX_TEXT_BYTES = 256 * 1024
TESSDATA_DIRS = (
    "/usr/share/tesseract-ocr/5/tessdata",
    "/usr/share/tesseract-ocr/4.00/tessdata",
    "/usr/share/tessdata",
)
RECOGNITION_SHARE = 0.6
PDF_DPI = 300
PAGE_TEXT_CHARS = 16  # a PDF page whose own text layer has fewer visible characters is read as a picture
_APIS: dict[tuple[str, str], Any] = {}  # the child's loaded engines, by data folder and languages


def tessdata(configured: str | None = None) -> Path | None:
    """The folder of Tesseract's language files: the configured one, else the first of
    TESSDATA_DIRS that holds any (None: none found)."""
    for folder in (configured,) if configured else TESSDATA_DIRS:
        if folder and any(Path(folder).glob("*.traineddata")):
            return Path(folder)
    return None


def available_languages(folder: Path | None) -> tuple[str, ...]:
    """The languages whose files the folder holds (``osd``, the script detector, is none)."""
    if folder is None:
        return ()
    return tuple(sorted(p.stem for p in folder.glob("*.traineddata") if p.stem != "osd"))


def installed() -> bool:
    """Whether the ``ocr`` extra's binding is installed."""
    return importlib.util.find_spec("tesserocr") is not None


def usable_languages(wanted: Sequence[str], configured: str | None = None) -> tuple[str, ...]:
    """Of the languages asked for, those the engine can read here, in their order (none when
    the binding or every language file is missing)."""
    if not installed():
        return ()
    have = set(available_languages(tessdata(configured)))
    return tuple(lang for lang in wanted if lang in have)


def version() -> str:
    """The engine and its version, as processingStatus names it (in the child)."""
    import tesserocr

    return f"{ENGINE} {tesserocr.tesseract_version().split()[1]}"


def _api(folder: str, languages: Sequence[str]) -> Any:
    key = (folder, "+".join(languages))
    if key not in _APIS:
        # The OCR children run it with one OpenMP thread (OMP_THREAD_LIMIT, set in their
        # environment by cardvault.services.OcrChildren: never here, in a process that may
        # also run speech recognition).
        import tesserocr

        _APIS.clear()  # one engine at a time: each holds its models
        _APIS[key] = tesserocr.PyTessBaseAPI(path=folder + "/", lang=key[1], psm=tesserocr.PSM.AUTO)
    return _APIS[key]


def bounded(picture: Any, max_pixels: int) -> Any:
    """The picture in grey, scaled down to at most ``max_pixels`` (its aspect kept)."""
    from PIL import Image

    picture = picture.convert("L")
    width, height = picture.size
    if width * height > max_pixels:
        ratio = (max_pixels / (width * height)) ** 0.5
        size = (max(1, int(width * ratio)), max(1, int(height * ratio)))
        picture = picture.resize(size, Image.Resampling.LANCZOS)
    return picture


def recognise(
    picture: Any, *, folder: str, languages: Sequence[str], min_confidence: float, seconds: float
) -> str:
    """The words Tesseract reads in the picture within ``seconds``: lines in reading order,
    paragraphs a blank line apart; empty when its words average under ``min_confidence``."""
    import tesserocr

    api = _api(folder, languages)
    api.SetImage(picture)
    # Layout analysis before recognition and the words' walk after it are not cancelled by the
    # timeout: recognition gets RECOGNITION_SHARE of the time, the rest is their margin.
    api.Recognize(timeout=max(1, int(seconds * RECOGNITION_SHARE * 1000)))
    level = tesserocr.RIL.WORD
    paragraphs: list[str] = []
    lines: list[str] = []
    line: list[str] = []
    confidences: list[float] = []
    iterator = api.GetIterator()
    if iterator is not None:
        for word in tesserocr.iterate_level(iterator, level):
            try:
                text = (word.GetUTF8Text(level) or "").strip()
            except RuntimeError:  # tesserocr's "No text returned": a word box with no text
                continue
            if not text:
                continue
            if line and word.IsAtBeginningOf(tesserocr.RIL.TEXTLINE):
                lines.append(" ".join(line))
                line = []
            if lines and word.IsAtBeginningOf(tesserocr.RIL.PARA):
                paragraphs.append("\n".join(lines))
                lines = []
            confidence = word.Confidence(level)
            confidences.append(confidence)
            if confidence >= min_confidence:
                line.append(text)
    if line:
        lines.append(" ".join(line))
    if lines:
        paragraphs.append("\n".join(lines))
    api.Clear()
    if not confidences or sum(confidences) / len(confidences) < min_confidence:
        return ""
    return "\n\n".join(p for p in paragraphs if p.strip())


def kept(text: str) -> str:
    """At most MAX_TEXT_BYTES of the text's UTF-8, cut between characters."""
    data = text.encode()
    return text if len(data) <= MAX_TEXT_BYTES else data[:MAX_TEXT_BYTES].decode(errors="ignore")


def read_image(path: str, **options: Any) -> dict[str, Any]:
    """The text of an image file (JPEG, PNG, GIF, WebP, AVIF: its first frame)."""
    from PIL import Image, ImageOps

    from cardvault.adapters.images import FORMATS, refusals

    with refusals(), Image.open(path, formats=FORMATS) as image:
        image.seek(0)
        if image.format == "JPEG":  # decode at a fraction of the size when it is larger than read
            ratio = (options["max_pixels"] / (image.size[0] * image.size[1])) ** 0.5
            if ratio < 0.5:
                image.draft("L", (int(image.size[0] * ratio * 2), int(image.size[1] * ratio * 2)))
        picture = bounded(ImageOps.exif_transpose(_flattened(image)), options["max_pixels"])
    text = recognise(picture, **_engine_options(options, options["seconds"]))
    return {"text": kept(text), "pages": 1}


def _flattened(image: Any) -> Any:
    """The frame on white where it is transparent (Tesseract reads dark on light)."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA", "P") or "transparency" in image.info:
        frame = image.convert("RGBA")
        ground = Image.new("RGBA", frame.size, "white")
        ground.alpha_composite(frame)
        return ground.convert("RGB")
    return image


def _engine_options(options: dict[str, Any], seconds: float) -> dict[str, Any]:
    return {
        "folder": options["folder"],
        "languages": options["languages"],
        "min_confidence": options["min_confidence"],
        "seconds": seconds,
    }


def read_pdf(path: str, **options: Any) -> dict[str, Any]:
    """The text read in a PDF's pages that have no text layer (up to ``pages`` of them, in
    order); ``pages``: how many were read as pictures."""
    import pypdfium2 as pdfium

    deadline = time.monotonic() + options["seconds"]
    try:
        document = pdfium.PdfDocument(path)
    except pdfium.PdfiumError as exc:
        raise ImageRefused("DOCUMENT_UNREADABLE", f"The PDF cannot be read: {exc}") from None
    texts: list[str] = []
    read = 0
    try:
        for index in range(len(document)):
            left = deadline - time.monotonic()
            if read >= options["pages"] or left <= 0 or sum(map(len, texts)) >= MAX_TEXT_BYTES:
                break
            page = document[index]
            textpage = page.get_textpage()
            own = textpage.get_text_range()
            textpage.close()
            if len("".join(own.split())) >= PAGE_TEXT_CHARS:
                page.close()
                continue
            width, height = page.get_size()  # in points, 72 a inch
            scale = min(PDF_DPI / 72, (options["max_pixels"] / max(width * height, 1)) ** 0.5)
            picture = page.render(scale=scale, grayscale=True).to_pil()
            page.close()
            read += 1
            texts.append(recognise(bounded(picture, options["max_pixels"]), **_engine_options(options, left)))
    except pdfium.PdfiumError as exc:
        raise ImageRefused("DOCUMENT_UNREADABLE", f"The PDF cannot be read: {exc}") from None
    finally:
        document.close()
    return {"text": kept("\n\n".join(t for t in texts if t)), "pages": read}
