"""Taking an import's entries into its account (cardvault.domain.portability.imports.jobs runs
the batches).

What an entry becomes (docs/imports.md has it per format):
- a link card (its URL), or a text card (a note without URL); its title and excerpt as the
  link's title and description, the user's notes, its highlights as annotations (placed once
  the page's text is known), its tags,
  folder, favorite and archived flags, and its creation time;
- a folder path becomes one folder named by its first MAX_FOLDER_DEPTH names joined with
  `` / `` (each name cut to MAX_FOLDER_NAME characters); a folder of that name (ignoring case)
  is used as it is;
- a URL that is no http or https URL (``javascript:``, ``data:``, none) fails the entry alone,
  and so does a text over the card limit; an invalid tag is dropped and counted;
- duplicates: an entry whose URL has the normal form of a card the account holds (Trash
  aside), or of an earlier entry of the file, is skipped (``skip``), merged into that card
  (``merge``: its tags, folder and notes added; a favorite or archived flag set), or made a card
  of its own (``create``);
- the account's budgets (``Budget``, from the settings): past the cards it may hold the entry
  that would make one more, and every entry after it, is not taken (``Stopped``: the job
  ends there); past the folders it may hold an entry is taken without its new folder (counted
  in ``unmapped``)."""

from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections.abc import Sequence

from sqlalchemy import func, select
from sqlalchemy.exc import DataError, IntegrityError
from sqlalchemy.orm import Session

from cardvault.domain import changes
from cardvault.domain.annotations import records
from cardvault.domain.cards import editing
from cardvault.domain.clock import now_ms
from cardvault.domain.errors import CardVaultError, Conflict, FolderLimitReached, InvalidInput
from cardvault.domain.folders import MAX_CARDS_PER_FOLDER, MAX_FOLDERS_PER_CARD, create_folder
from cardvault.domain.models import Card, Folder, FolderCard, ImportJob
from cardvault.domain.names import tag_key
from cardvault.domain.portability.imports.formats import Broken, Entry, Item
from cardvault.domain.tags.names import clean_tag
from cardvault.domain.urls import MAX_URL, normal_url, url_key

MAX_FAILURES = 100  # failures listed in the report (all are counted)
MAX_TAGS = 100  # tags a card takes (the spec's TagList)
MAX_NOTES = 65_536  # characters of a card's notes (the spec's Notes)
MAX_FOLDER_DEPTH = 4
MAX_FOLDER_NAME = 60
MAX_TITLE = 2000  # characters of a link's title or description taken from a file
# What no text of a card keeps: control characters but tab and line breaks (NUL first).
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_URL_BREAKERS = re.compile("[\x00-\x20\x7f-\x9f]")  # what the spec's Url cannot hold


@dataclasses.dataclass(frozen=True)
class Budget:
    """What an account's imports may make (None: no bound): the entries its imports started
    in the last 24 hours may read together, and the cards and folders it may hold."""

    entries_per_day: int | None = None
    max_cards: int | None = None
    max_folders: int | None = None


NO_BUDGET = Budget()


@dataclasses.dataclass(frozen=True)
class Stopped:
    """A budget stopped the import at this entry: it and those after it are not taken."""

    place: str
    reason: str


def cards_stop(max_cards: int | None, done: str, unit: str) -> str:
    """Why an import (or a restore) stopped at the cards the account may hold."""
    return (
        f"not {done}, nor any {unit} after it: the account holds the {max_cards} cards it may"
        " (CARD_LIMIT_REACHED); delete cards, then import the rest"
    )


@dataclasses.dataclass
class Batch:
    """What a batch's entries became: the stages their new cards wait for, how many cards
    were made (for the account's holdings), and where a budget stopped it, if one did."""

    stages: list[tuple[int, str]]
    made: int
    stopped: Stopped | None


def taken(
    session: Session,
    job: ImportJob,
    items: Sequence[Item],
    *,
    alone: bool,
    budget: Budget = NO_BUDGET,
    cards_room: int | None = None,
) -> Batch:
    """Take the batch's entries, making at most ``cards_room`` cards (None: no bound)."""
    taker = _Taker(session, job, budget, cards_room)
    if job.on_duplicate != "create":
        taker.look_up([item.url for item in items if isinstance(item, Entry) and item.url is not None])
    for item in items:
        taker.take(item, alone=alone)
        if taker.stopped is not None:
            break
    return Batch(taker.stages, taker.made, taker.stopped)


class _Taker:
    """Takes a batch's entries into the job's account, counting on the job."""

    def __init__(self, session: Session, job: ImportJob, budget: Budget, cards_room: int | None) -> None:
        self.session, self.job, self.budget = session, job, budget
        self.account_id = job.account_id
        self.cards_room, self.made = cards_room, 0
        self.stopped: Stopped | None = None
        self.folders_full = False  # the account holds as many folders as it may
        self.folders: dict[str, str] = {}  # folder name keys to ids, as met
        self.filed: dict[str, int] = {}  # folder ids to how many cards they hold
        self.keys: dict[str, str | None] = {}  # URLs to their normal form's key
        self.held: dict[str, str] = {}  # keys to the card of that page (look_up, then those made)
        self.stages: list[tuple[int, str]] = []
        self.failures = list(job.failures)
        self.unmapped = dict(job.unmapped)

    def take(self, item: Item, *, alone: bool) -> None:
        """Take one entry. ``alone``: in a savepoint of its own, so that its failure leaves
        nothing behind and is counted; otherwise (the batch has one savepoint) a failure while
        writing propagates, and the batch is taken again entry by entry."""
        job = self.job
        job.found += 1
        if isinstance(item, Broken):
            self._failed(item.place, item.reason)
            return
        self.dropped: dict[str, int] = {}
        try:
            url, content = _url_and_content(item)  # checked before anything is written
        except CardVaultError as exc:
            self._failed(item.place, str(exc))
            return
        if not alone:
            outcome = self._take(item, url, content)
        else:
            try:
                with self.session.begin_nested():  # an entry that fails leaves nothing behind
                    outcome = self._take(item, url, content)
            except CardVaultError as exc:
                self._failed(item.place, str(exc))
                return
            except (DataError, IntegrityError) as exc:  # a value the database refuses (the savepoint is gone)
                self._failed(item.place, f"the database refused a value: {type(exc.orig).__name__}")
                return
        if outcome == "stopped":
            self._failed(item.place, self.stopped.reason if self.stopped else "")
            return
        if outcome == "created":
            self.made += 1
            job.created += 1
        elif outcome == "merged":
            job.merged += 1
        else:
            job.skipped += 1
        for name in [*item.unmapped, *self.dropped]:
            self.unmapped[name] = self.unmapped.get(name, 0) + 1
        job.unmapped = dict(self.unmapped)

    def _failed(self, place: str, reason: str) -> None:
        self.job.failed += 1
        if len(self.failures) < MAX_FAILURES:
            self.failures.append({"entry": place, "reason": reason[:500]})
            self.job.failures = list(self.failures)

    def _count(self, name: str, many: int = 1) -> None:
        """Note that the entry being taken lost something (counted once it is taken)."""
        if many:
            self.dropped[name] = 1

    def _take(self, entry: Entry, url: str | None, content: str) -> str:
        existing = self._existing(url) if url is not None and self.job.on_duplicate != "create" else None
        if existing is not None and self.job.on_duplicate == "skip":
            return "skipped"
        if existing is None and self.cards_room is not None and self.made >= self.cards_room:
            self.stopped = Stopped(entry.place, cards_stop(self.budget.max_cards, "taken", "entry"))
            return "stopped"
        tags = self._tags(entry.tags)
        notes = self._notes(entry)
        folder_id = self._folder(entry.folder)
        if existing is not None:
            self._merge(existing, entry, tags, notes, folder_id)
            return "merged"
        written = editing.add_card(
            self.session,
            account_id=self.account_id,
            content=content,
            notes=notes,
            tags=tags,
            url=url,
            created_at=entry.created_at,
            counted=False,  # the batch counts its cards at its end (cardvault.domain.cards.holdings)
            queued=True,
            imported=True,
        )
        card = written.card
        if url is not None:
            card.metadata_title = _line(entry.title)
            card.metadata_description = _line(entry.excerpt)
        card.is_favorited = entry.favorite
        if entry.archived:
            card.archived_at = card.created_at
        if folder_id is not None:
            self._file(card, folder_id, new=True)
        records.keep_imported(self.session, card, entry.highlights)
        self.stages += [(card.pk, stage) for stage in written.stages]  # sent by the account's turns
        if url is not None and card.url_key is not None:
            self.held.setdefault(card.url_key, card.id)  # a later entry of the same page finds it
        return "created"

    def look_up(self, urls: list[str]) -> None:
        """Find, in one statement, the account's cards (outside Trash) of the batch's pages."""
        keys = {key for key in (self._key(url) for url in urls) if key is not None}
        if not keys:
            return
        query = (
            select(Card.url_key, Card.id)
            .where(Card.account_id == self.account_id, Card.url_key.in_(keys), Card.deleted_at.is_(None))
            .order_by(Card.pk.desc())  # the oldest card of a page last, so it is the one kept
        )
        self.held.update({key: card_id for key, card_id in self.session.execute(query) if key is not None})

    def _key(self, url: str) -> str | None:
        if url not in self.keys:
            self.keys[url] = url_key(url.strip())
        return self.keys[url]

    def _existing(self, url: str) -> Card | None:
        """The card of the same page: one the account held when the batch began, or one an
        earlier entry of the file made."""
        card_id = self.held.get(self._key(url) or "")
        return (
            None
            if card_id is None
            else editing.get_card(self.session, account_id=self.account_id, card_id=card_id)
        )

    def _tags(self, raws: list[str]) -> list[str]:
        kept: list[str] = []
        seen: set[str] = set()
        for raw in raws:
            try:
                tag = clean_tag(raw)
            except CardVaultError:
                self._count("tags (invalid)")
                continue
            if tag_key(tag) not in seen:
                seen.add(tag_key(tag))
                kept.append(tag)
        self._count("tags (over 100)", max(0, len(kept) - MAX_TAGS))
        return kept[:MAX_TAGS]

    def _notes(self, entry: Entry) -> str | None:
        parts = [note.strip() for note in entry.notes if note.strip()]
        notes = _CONTROL.sub("", "\n\n".join(parts))
        if len(notes) > MAX_NOTES:
            self._count("notes (cut at 65,536 characters)")
            notes = notes[:MAX_NOTES]
        return notes or None

    def _folder(self, path: list[str]) -> str | None:
        names = [_visible(name)[:MAX_FOLDER_NAME].strip() for name in path[:MAX_FOLDER_DEPTH]]
        name = " / ".join(name for name in names if name)
        if not name:
            return None
        key = tag_key(name)
        if key not in self.folders:
            found = self.session.scalar(
                select(Folder.id).where(Folder.account_id == self.account_id, Folder.name_key == key)
            )
            if found is None and self.folders_full:
                self._count("folder (the account's folder limit)")
                return None
            if found is None:
                try:
                    found = create_folder(
                        self.session,
                        account_id=self.account_id,
                        name=name,
                        max_folders=self.budget.max_folders,
                    ).id
                except FolderLimitReached:
                    self.folders_full = True
                    self._count("folder (the account's folder limit)")
                    return None
                except Conflict:
                    found = self.session.scalar(
                        select(Folder.id).where(Folder.account_id == self.account_id, Folder.name_key == key)
                    )
            if found is None:
                return None
            self.folders[key] = found
        return self.folders[key]

    def _file(self, card: Card, folder_id: str, *, new: bool = False) -> None:
        """Put the card in the folder, as far as a card's folders and a folder's cards allow
        (past either, the folder is counted as not kept); a ``new`` card is in no folder yet
        (its folder rows are not read)."""
        if not new and any(row.folder_id == folder_id for row in card.folder_rows):
            return
        if folder_id not in self.filed:  # counted once a batch, then kept up to date here
            held = select(func.count()).select_from(FolderCard).where(FolderCard.folder_id == folder_id)
            self.filed[folder_id] = self.session.scalar(held) or 0
        full = not new and len(card.folder_rows) >= MAX_FOLDERS_PER_CARD
        if full or self.filed[folder_id] >= MAX_CARDS_PER_FOLDER:
            self._count("folder (full)")
            return
        changes.note(
            self.session, account_id=self.account_id, kind="folder", ids=[folder_id]
        )  # its cardCount
        row = FolderCard(
            folder_id=folder_id, card_pk=card.pk, added_at=now_ms(), card_created_at=card.created_at
        )
        if new:
            self.session.add(row)
        else:
            card.folder_rows.append(row)
        self.filed[folder_id] += 1

    def _merge(
        self, card: Card, entry: Entry, tags: list[str], notes: str | None, folder_id: str | None
    ) -> None:
        new_tags = [tag for tag in tags if tag_key(tag) not in {tag_key(t) for t in card.tags}]
        merged_notes = card.notes
        if notes and notes not in (card.notes or ""):
            merged_notes = f"{card.notes}\n\n{notes}" if card.notes else notes
            merged_notes = merged_notes[:MAX_NOTES]
        if new_tags or merged_notes != card.notes:
            editing.edit_card(
                self.session,
                account_id=self.account_id,
                card_id=card.id,
                notes=merged_notes,
                tags=[*card.tags, *new_tags][:MAX_TAGS],
            )
        if entry.favorite and not card.is_favorited:
            editing.set_favorite(self.session, account_id=self.account_id, card_id=card.id, is_favorited=True)
        if entry.archived and card.archived_at is None:
            editing.set_archived(self.session, account_id=self.account_id, card_id=card.id, is_archived=True)
        if folder_id is not None:
            self._file(card, folder_id)
        records.keep_imported(self.session, card, entry.highlights)


def _url_and_content(entry: Entry) -> tuple[str | None, str]:
    """The entry's URL (checked) and the card's content; InvalidInput when it has neither a
    page nor a text to keep."""
    if entry.url is not None:
        url = entry.url.strip()
        if len(url) > MAX_URL:
            raise InvalidInput(f"the URL is over {MAX_URL} characters long")
        if normal_url(url) is None:
            scheme = url.split(":", 1)[0].lower() if ":" in url else ""
            shown = f"a {scheme}: URL" if scheme and scheme.isalpha() and len(scheme) < 20 else "no URL"
            raise InvalidInput(f"the entry's URL is {shown}, not an http or https page")
        if _URL_BREAKERS.search(url):
            raise InvalidInput("the entry's URL holds spaces or control characters")
        return url, url
    if entry.text is not None and _CONTROL.sub("", entry.text).strip():
        return None, _CONTROL.sub("", entry.text)
    raise InvalidInput("the entry has no URL and no text")


def _line(value: str | None) -> str | None:
    """A title or description as a card keeps it: one line of visible text, cut at MAX_TITLE."""
    if value is None:
        return None
    return " ".join(_CONTROL.sub(" ", value).split())[:MAX_TITLE] or None


def _visible(name: str) -> str:
    """A folder name without control or invisible format characters, its spaces collapsed."""
    kept = "".join(c for c in name if unicodedata.category(c) not in ("Cc", "Cf"))
    return " ".join(kept.split())
