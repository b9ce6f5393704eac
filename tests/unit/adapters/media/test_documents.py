"""The document reader (cardvault.adapters.media.documents), called in this process: what a
document's text keeps."""

from __future__ import annotations

from pathlib import Path

from cardvault.adapters.media import documents


def test_a_documents_text_is_kept_to_its_limit(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text("word " * 10_000)
    facts = documents.text_file(str(path))
    assert len(facts["text"]) == documents.TEXT_KEEP and facts["preview"]["lineCount"] == 1
    assert facts["preview"]["excerpt"] == ("word " * 10_000)[: documents.EXCERPT_CHARS]
