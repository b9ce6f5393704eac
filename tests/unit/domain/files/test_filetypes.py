"""File types judged by their bytes: every accepted signature, the refused ones, and text told
apart by its name only once the bytes are text."""

from __future__ import annotations

import pytest

from cardvault.domain.files import filetypes
from cardvault.domain.files.filetypes import Refused, sniff

EBML = b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82"  # a Matroska header up to its DocType
ZIP = b"PK\x03\x04" + b"\x00" * 26  # a local file header, then the first entry's name
ODT = "application/vnd.oasis.opendocument.text"


def _ftyp(major: bytes, *compatible: bytes) -> bytes:
    box = major + b"\x00\x00\x00\x00" + b"".join(compatible)
    return (8 + len(box)).to_bytes(4, "big") + b"ftyp" + box + b"\x00" * 32


@pytest.mark.parametrize(
    ("head", "name", "mime", "card_type", "kind"),
    [
        (b"\xff\xd8\xff\xe0\x00\x10JFIF", "a.bin", "image/jpeg", "image", "image"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "a.jpg", "image/png", "image", "image"),
        (b"GIF89a\x01\x00", "a", "image/gif", "image", "image"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "a", "image/webp", "image", "image"),
        (_ftyp(b"avif", b"mif1", b"miaf"), "a", "image/avif", "image", "image"),
        (_ftyp(b"isom", b"iso2", b"mp41"), "a", "video/mp4", "video", "video"),
        (_ftyp(b"qt  "), "a", "video/quicktime", "video", "video"),
        (EBML + b"\x84webm", "a", "video/webm", "video", "video"),
        (EBML + b"\x88matroska", "a", "video/x-matroska", "video", "video"),
        (_ftyp(b"M4A ", b"isom"), "a", "audio/mp4", "audio", "audio"),
        (b"ID3\x04\x00\x00", "a", "audio/mpeg", "audio", "audio"),
        (b"\xff\xfb\x90\x00", "a", "audio/mpeg", "audio", "audio"),
        (b"OggS\x00\x02", "a", "audio/ogg", "audio", "audio"),
        (b"fLaC\x00\x00", "a", "audio/flac", "audio", "audio"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "a", "audio/wav", "audio", "audio"),
        (b"%PDF-1.7\n", "a.txt", "application/pdf", "document", "pdf"),
        (ZIP + b"[Content_Types].xmlword/document.xml", "a", None, "document", "office"),
        (ZIP + b"mimetypeapplication/vnd.oasis.opendocument.text", "a", ODT, "document", "office"),
        (ZIP + b"mimetypeapplication/epub+zip", "a", "application/epub+zip", "document", "archive"),
        (ZIP + b"photos/1.jpg", "a", "application/zip", "document", "archive"),
        (b"\x1f\x8b\x08\x00", "a", "application/gzip", "document", "archive"),
        ("# Title\n\nText with é\n".encode(), "README.md", "text/markdown", "text", "markdown"),
        (b"def main():\n    pass\n", "main.py", "text/plain", "document", "source"),
        (b"plain words\n", "notes.txt", "text/plain", "document", "text"),
        (b"\xef\xbb\xbfwith a byte order mark\n", "a.txt", "text/plain", "document", "text"),
    ],
)  # fmt: skip
def test_accepted_types_by_their_bytes(
    head: bytes, name: str, mime: str | None, card_type: str, kind: str
) -> None:
    found = sniff(head, file_name=name, complete=True)
    assert (found.card_type, found.file_kind) == (card_type, kind)
    if mime is not None:
        assert found.mime_type == mime


def test_a_source_file_names_its_language() -> None:
    assert sniff(b"fn main() {}\n", file_name="main.rs", complete=True).language == "rust"


@pytest.mark.parametrize(
    ("head", "detected"),
    [
        (_ftyp(b"heic", b"mif1", b"heic"), "heic"),
        (_ftyp(b"mif1", b"heic"), "heic"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"/>', "svg"),
        (b'  <?xml version="1.0"?>\n<!DOCTYPE svg><svg/>', "svg"),
        (b"MZ\x90\x00", None),
        (b"\x7fELF\x02\x01", None),
        (b"text with a NUL\x00 inside", None),
        (b"\xc3\x28 not UTF-8", None),
        (b"escape \x1b[31m codes", None),
        (b"", None),
    ],
)
def test_refused_types(head: bytes, detected: str | None) -> None:
    with pytest.raises(Refused) as refused:
        sniff(head, file_name="a.png", complete=True)
    assert refused.value.detected == detected


def test_text_cut_inside_a_character_at_the_end_of_a_partial_read_is_text() -> None:
    head = ("é" * 2048).encode()[:4095]  # the read stopped inside the last character
    assert sniff(head, file_name="a.txt", complete=False).file_kind == "text"
    with pytest.raises(Refused):
        sniff(head, file_name="a.txt", complete=True)


@pytest.mark.parametrize(
    ("name", "clean"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\me\\photo.jpg", "photo.jpg"),
        ("a\x00b\x07c.txt", "abc.txt"),
        ("..", "file"),
        ("x" * 300 + ".jpeg", "x" * 250 + ".jpeg"),
    ],
)
def test_file_names_keep_their_last_part_without_control_characters(name: str, clean: str) -> None:
    assert filetypes.clean_file_name(name) == clean


@pytest.mark.parametrize(
    ("mime", "attachment"),
    [
        ("image/png", False),
        ("video/mp4", False),
        ("application/pdf", False),
        ("text/plain", True),
        ("text/html", True),
        ("image/svg+xml", True),
        ("application/xml", True),
        ("application/zip", True),
    ],
)
def test_what_a_browser_could_run_is_an_attachment(mime: str, attachment: bool) -> None:
    assert filetypes.served_as_attachment(mime) is attachment
