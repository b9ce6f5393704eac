"""Restoring a link card's capture out of an export archive (for cardvault.workers.restores; the
rules are cardvault.domain.portability.restore.captures'): its files read and checked, the
screenshot decoded in the decoder's child, which makes its 256 px and 48 px renditions again,
all of them stored under new keys of the card's own and given to the card.

Every byte stored counts toward the account's stored-files quota: the room is checked before the
files are written and taken when the card records them; a capture past the quota is refused
(the card fails alone) and its written files are doomed."""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path
from typing import Any

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.adapters.images import ImageRefused
from cardvault.domain.db import Database
from cardvault.domain.errors import InvalidInput
from cardvault.domain.files import doomed, quotas
from cardvault.domain.portability.restore import captures
from cardvault.domain.portability.restore.checks import Archive


def restore(
    db: Database,
    store: BlobStore,
    decoder: Decoder,
    zipped: Archive,
    *,
    account_id: str,
    card_id: str,
    record: dict[str, Any],
    quota: quotas.Quotas,
) -> int:
    """Store the record's capture files and give them to the card; return how many files
    (QuotaExceeded when they would take the account past ``quota``)."""
    files = captures.files_of(zipped, record)
    pictures = _pictures(decoder, files["screenshot"]) if "screenshot" in files else {}
    with db.transaction(write=False) as session:  # no byte written past the quota
        needed = sum(map(len, files.values())) + sum(map(len, pictures.values()))
        quotas.ensure_fits(session, account_id=account_id, stored=needed, quotas=quota)
    lease = secrets.token_hex(16)
    written = captures.placed(
        account_id=account_id, card_id=card_id, lease=lease, files=files, pictures=pictures
    )
    facts = captures.capture_facts(record, files)
    try:
        for key, data, content_type in written.values():
            store.put(key, data, content_type=content_type)
        with db.transaction() as session:
            objects = {column: (key, len(data)) for column, (key, data, _) in written.items()}
            captures.restore_capture(
                session, account_id=account_id, card_id=card_id, objects=objects, facts=facts, quotas=quota
            )
    except BaseException:  # what was written belongs to nobody
        with db.transaction() as session:
            doomed.doom(session, [key for key, _, _ in written.values()])
        raise
    return len(files)


def _pictures(decoder: Decoder, screenshot: bytes) -> dict[str, bytes]:
    """The screenshot's 256 px and 48 px renditions, made in the decoder's child."""
    with tempfile.TemporaryDirectory(prefix="cardvault-") as workdir:
        path = Path(workdir) / "screenshot.webp"
        path.write_bytes(screenshot)
        try:
            made = decoder.renditions(path, large=False)
        except ImageRefused as refused:
            raise InvalidInput(f"The card's screenshot cannot be read: {refused}") from None
    return {"screenshot_compact_object": made.compact, "screenshot_placeholder_object": made.placeholder}
