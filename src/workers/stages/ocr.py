"""Running the ``ocr`` stage: the card's picture (an image, a PDF's pages without a text
layer, a link's screenshot) read by an OCR child (its rules: cardvault.domain.pipeline.ocr;
the engine: cardvault.adapters.ocr)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from cardvault.adapters import ocr as engine
from cardvault.adapters.images import ImageRefused
from cardvault.domain.models import Card
from cardvault.domain.pipeline import ai, ocr
from cardvault.domain.pipeline.errors import StageFailed, StageSkipped
from cardvault.services import Services


def run(services: Services, card: Card, _lease: str) -> dict[str, object]:
    """The words in the card's picture, in reading order (empty when none is read with
    confidence)."""
    config = services.settings.ocr
    if not config.enabled:
        raise StageSkipped("OCR_OFF")
    languages = engine.usable_languages(config.languages, config.tessdata)
    folder = engine.tessdata(config.tessdata)
    if not languages or folder is None:
        raise StageSkipped("NO_OCR_ENGINE")
    with services.database.transaction(write=False) as session:
        page_text = ai.source_text(session, card.pk) if card.type != "image" else None
    picture = ocr.picture_of(card, page_text)
    if isinstance(picture, str):
        raise StageSkipped(picture)
    source, stored = picture
    options = {
        "folder": str(folder),
        "languages": list(languages),
        "min_confidence": config.min_confidence,
        "max_pixels": config.max_pixels,
        "pages": config.pages,
        "seconds": config.seconds,
        "memory": min(config.memory_mb, 2048) * 1024 * 1024,
    }
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        original = Path(workdir) / "original"
        services.blobs.download(stored, original)
        try:
            head = services.ocr.read(original, source=source, options=options)
        except ImageRefused as refused:
            transient = refused.code == "DECODE_BUSY"
            raise StageFailed(refused.code, str(refused), transient=transient) from None
    if source == "pdf" and not head["pages"]:
        raise StageSkipped("HAS_TEXT")  # every page read had a text layer of its own
    return ocr.read(
        str(head["text"]), engine=str(head["engine"]), languages=languages, pages=int(head["pages"])
    )
