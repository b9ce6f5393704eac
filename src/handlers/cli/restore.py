"""``cardvault import ZIP --account NAME``: restore an export into an account, a card at a time
(cardvault.domain.portability.restore has the rules, cardvault.workers.restores the steps), with
a progress bar on a terminal and one plain line per step otherwise (logs, CI). A card that
cannot be restored is reported and skipped; the others are kept. The restored cards'
processing (renditions, posters, the link stages) is sent to the workers (with Redis, at once;
on the embedded default, the server's sweeper sends it when ``cardvault serve`` runs)."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from cardvault.adapters.blobs import BlobStore
from cardvault.adapters.decoder import Decoder
from cardvault.domain.db import Database
from cardvault.domain.errors import CardVaultError
from cardvault.domain.files.quotas import Quotas
from cardvault.domain.portability.restore import cards as restore_cards
from cardvault.domain.portability.restore import checks as restore_checks
from cardvault.workers import restores

PLAIN_EVERY = 100  # cards between plain progress lines


@dataclasses.dataclass
class Outcome:
    """What an import did."""

    cards: int = 0
    folders: int = 0
    files: int = 0
    failed: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (card id in the archive, why)


def import_archive(
    db: Database,
    store: BlobStore,
    *,
    account_id: str,
    path: Path,
    quotas: Quotas,
    on_card: Callable[[int, int], None] = lambda done, total: None,
) -> Outcome:
    """Restore the archive at ``path`` into the account, within its ``quotas``; ``on_card(done,
    total)`` after each card."""
    archive = restore_checks.open_archive(path)
    outcome = Outcome()
    decoder = Decoder()
    servable = restores.servable()
    try:
        with db.transaction() as session:
            folder_ids = restore_cards.restore_folders(
                session, account_id=account_id, records=archive.folders
            )
        outcome.folders = len(folder_ids)
        for done, raw in enumerate(archive.cards, start=1):
            made: list[str] = []  # the card, once created: removed again if a later step fails
            try:
                record = restore_checks.check_record(raw, servable)
                outcome.files += restores.restore_card(
                    db, store, decoder, archive, account_id, record, folder_ids, made, quotas=quotas
                )
                outcome.cards += 1
            except Exception as exc:  # one card's failure, whatever it is, never stops the rest
                why = exc.message if isinstance(exc, CardVaultError) else f"{type(exc).__name__}: {exc}"
                outcome.failed.append((str(raw.get("id")), why))
                if made:
                    with db.transaction() as session:
                        restore_cards.discard_card(session, account_id=account_id, card_id=made[0])
            on_card(done, len(archive.cards))
    finally:
        decoder.close()
        archive.zip.close()
    return outcome


def run(
    db: Database, store: BlobStore, *, account_id: str, path: Path, quotas: Quotas, out: TextIO = sys.stdout
) -> int:
    """The command: import with progress shown on ``out``; the exit status."""
    console = Console(file=out, no_color=None)
    live = console.is_terminal
    columns = (TextColumn("Importing cards"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, disable=not live) as progress:
        task = progress.add_task("cards", total=None)

        def shown(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)
            if not live and (done % PLAIN_EVERY == 0 or done == total):
                print(f"imported {done}/{total} cards", file=out, flush=True)

        try:
            outcome = import_archive(
                db, store, account_id=account_id, path=path, quotas=quotas, on_card=shown
            )
        except CardVaultError as exc:
            print(f"cardvault: {exc.message}", file=sys.stderr)
            return 1
    print(
        f"Imported {outcome.cards} cards, {outcome.folders} folders and {outcome.files} files.",
        file=out,
        flush=True,
    )
    for card_id, why in outcome.failed:
        print(f"cardvault: card {card_id} was not imported: {why}", file=sys.stderr)
    return 1 if outcome.failed else 0
