"""What a file is, judged by its bytes: an allowlist of signatures, never the declared type and
never the name alone. The name only tells apart kinds of text (Markdown, a language's source,
plain text) once the bytes have shown the file is text.

Every accepted type has a card kind (image, video, audio, document, or text for Markdown, whose
text becomes the card's content), a ``fileKind`` from a fixed vocabulary, and a size limit."""

from __future__ import annotations

import dataclasses
import posixpath
import re

SNIFF_BYTES = 4096  # read from the start of an upload to judge it
MB = 1000 * 1000
GIB = 1024**3

# fileKind -> the most bytes one file of it may have
MAX_BYTES = {
    "image": 20 * MB - 1,  # "under 20 MB", as for replaced images
    "video": 2 * GIB,
    "audio": 500 * MB,
    "pdf": 200 * MB,
    "office": 200 * MB,
    "archive": 500 * MB,
    "markdown": 512 * 1024,  # its text becomes the card's content, whose limit this is
    "text": 10 * MB,
    "source": 10 * MB,
}
LARGEST = max(MAX_BYTES.values())

# Source languages by extension (``fileLanguage``); other text is plain text.
LANGUAGES = {
    ".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "typescript",
    ".jsx": "javascript", ".java": "java", ".kt": "kotlin", ".go": "go", ".rs": "rust", ".c": "c",
    ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp", ".rb": "ruby", ".php": "php",
    ".swift": "swift", ".scala": "scala", ".sh": "shell", ".bash": "shell", ".sql": "sql",
    ".css": "css", ".html": "html", ".htm": "html", ".xml": "xml", ".json": "json",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".lua": "lua", ".r": "r", ".pl": "perl",
    ".hs": "haskell", ".ex": "elixir", ".erl": "erlang", ".clj": "clojure", ".dart": "dart",
}  # fmt: skip
_MARKDOWN = (".md", ".markdown", ".mdown", ".mkd")


@dataclasses.dataclass(frozen=True)
class FileType:
    """A sniffed file type."""

    mime_type: str
    card_type: str  # image, video, audio, document, or text (Markdown)
    file_kind: str  # image, video, audio, pdf, office, archive, markdown, text, source
    language: str | None = None

    @property
    def max_bytes(self) -> int:
        return MAX_BYTES[self.file_kind]


class Refused(ValueError):
    """Bytes that are no accepted type; ``detected`` names what they are when known."""

    def __init__(self, message: str, detected: str | None = None) -> None:
        super().__init__(message)
        self.detected = detected


def _ftyp_brands(head: bytes) -> set[bytes]:
    """The ISO media file's major and compatible brands (empty when it is none)."""
    if head[4:8] != b"ftyp" or len(head) < 12:
        return set()
    size = int.from_bytes(head[:4], "big")
    box = head[8 : max(12, min(size, len(head)))]
    return {box[:4]} | {box[i : i + 4] for i in range(8, len(box) - 3, 4)}


_ODF = re.compile(rb"application/vnd\.oasis\.opendocument\.[a-z.-]{1,40}")
_HEIC_BRANDS = {b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs"}
_AUDIO_BRANDS = {b"M4A ", b"M4B ", b"M4P ", b"F4A ", b"F4B "}


def _image_or_media(head: bytes) -> FileType | None:
    if head.startswith(b"\xff\xd8\xff"):
        return FileType("image/jpeg", "image", "image")
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return FileType("image/png", "image", "image")
    if head.startswith((b"GIF87a", b"GIF89a")):
        return FileType("image/gif", "image", "image")
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return FileType("image/webp", "image", "image")
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return FileType("audio/wav", "audio", "audio")
    brands = _ftyp_brands(head)
    if brands & {b"avif", b"avis"}:
        return FileType("image/avif", "image", "image")
    if brands & _HEIC_BRANDS or b"mif1" in brands or b"msf1" in brands:
        raise Refused("HEIC images are not accepted; convert to JPEG, PNG, WebP or AVIF.", "heic")
    if brands & _AUDIO_BRANDS:
        return FileType("audio/mp4", "audio", "audio")
    if b"qt  " in brands:
        return FileType("video/quicktime", "video", "video")
    if brands:
        return FileType("video/mp4", "video", "video")
    if head.startswith(b"\x1a\x45\xdf\xa3"):  # EBML: Matroska or WebM, named in the DocType
        return (
            FileType("video/webm", "video", "video")
            if b"webm" in head[:64]
            else FileType("video/x-matroska", "video", "video")
        )
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return FileType("audio/mpeg", "audio", "audio")
    if head.startswith(b"OggS"):
        return FileType("audio/ogg", "audio", "audio")
    if head.startswith(b"fLaC"):
        return FileType("audio/flac", "audio", "audio")
    return None


def _document(head: bytes) -> FileType | None:
    if head.startswith(b"%PDF-"):
        return FileType("application/pdf", "document", "pdf")
    if head.startswith(b"PK\x03\x04"):
        odf = _ODF.match(head, 38)  # the first entry, "mimetype", stored as is
        if head[30:38] == b"mimetype" and odf:
            return FileType(odf.group().decode(), "document", "office")
        if b"mimetypeapplication/epub+zip" in head[:100]:
            return FileType("application/epub+zip", "document", "archive")
        for folder, mime in (
            (b"word/", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
            (b"xl/", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
            (b"ppt/", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
        ):
            if folder in head:
                return FileType(mime, "document", "office")
        return FileType("application/zip", "document", "archive")
    if head.startswith(b"\x1f\x8b"):
        return FileType("application/gzip", "document", "archive")
    if head.startswith(b"7z\xbc\xaf\x27\x1c"):
        return FileType("application/x-7z-compressed", "document", "archive")
    if head[257:262] == b"ustar":
        return FileType("application/x-tar", "document", "archive")
    return None


def _text(head: bytes, file_name: str, complete: bool) -> FileType | None:
    """Text: UTF-8 (a character cut at the end of a partial read is allowed) with no NUL and no
    control characters but tab, line feed, carriage return and form feed."""
    if b"\x00" in head:
        return None
    sample = head.removeprefix(b"\xef\xbb\xbf")
    try:
        text = sample.decode("utf-8") if complete else sample.decode("utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        if complete or exc.start < len(sample) - 3:
            return None
        text = sample[: exc.start].decode("utf-8")
    if any(ord(c) < 32 and c not in "\t\n\r\f" for c in text):
        return None
    start = text.lstrip()[:512].lower()
    if start.startswith("<svg") or (start.startswith(("<?xml", "<!doctype svg")) and "<svg" in start):
        raise Refused("SVG images are not accepted (a browser runs their scripts).", "svg")
    extension = posixpath.splitext(file_name.lower())[1]
    if extension in _MARKDOWN:
        return FileType("text/markdown", "text", "markdown")
    if extension in LANGUAGES:
        return FileType("text/plain", "document", "source", language=LANGUAGES[extension])
    return FileType("text/plain", "document", "text")


def sniff(head: bytes, *, file_name: str, complete: bool) -> FileType:
    """The type of a file from its first bytes (``complete``: they are the whole file); Refused
    when it is none of the accepted types."""
    if not head:
        raise Refused("The file is empty.")
    found = _image_or_media(head) or _document(head) or _text(head, file_name, complete)
    if found is None:
        raise Refused("The file's type is not accepted (judged by its content, not its name).")
    return found


def extension(file_name: str) -> str | None:
    """The name's extension, lower case, without the dot (None when it has none)."""
    ext = posixpath.splitext(file_name)[1].lower().lstrip(".")
    return ext or None


def clean_file_name(name: str) -> str:
    """A name safe to store and to send in headers: the last path part, without control
    characters, at most 255 characters (the extension kept)."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = "".join(c for c in base if c.isprintable()).strip().strip(".") or "file"
    if len(base) > 255:
        stem, ext = posixpath.splitext(base)
        base = stem[: 255 - len(ext[:16])] + ext[:16]
    return base


def served_as_attachment(mime_type: str) -> bool:
    """Whether a browser must download the file rather than show it: everything but raster
    images, audio, video and PDF (HTML, SVG, XML and scripts could run in our origin)."""
    return not (
        mime_type in ("image/jpeg", "image/png", "image/gif", "image/webp", "image/avif", "application/pdf")
        or mime_type.startswith(("audio/", "video/"))
    )
