"""Import jobs in the domain: what each entry becomes, duplicates in each mode, failures and
their report, batches taken once, and the job's ends."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import func, select

from cardvault.domain.cards import editing, listing, reading, trash
from cardvault.domain.db import Database
from cardvault.domain.errors import ImportFinished
from cardvault.domain.folders import create_folder
from cardvault.domain.models import Annotation, Card, DoomedObject, Folder, ImportJob
from cardvault.domain.portability.imports import entries as import_entries
from cardvault.domain.portability.imports import jobs as import_jobs
from cardvault.domain.portability.imports.formats import Broken, Entry, Highlight, Item
from cardvault.domain.urls import normal_url

SECRET = "s" * 48
LEASE = "run-1"  # the lease of the run that claimed the job


def _job(database: Database, account_id: str, on_duplicate: str = "skip") -> str:
    """A running job, as a worker's claim leaves it."""
    with database.transaction() as session:
        job = import_jobs.new_job(
            import_id=import_jobs.new_import_id(),
            account_id=account_id,
            file_format="netscape",
            on_duplicate=on_duplicate,
            file_name="bookmarks.html",
            file_size=1,
            object_key=f"accounts/{account_id}/imports/x/bookmarks.html",
        )
        job.status, job.attempts, job.lease = "running", 1, LEASE
        session.add(job)
        return job.id


def _take(database: Database, job_id: str, items: list[Item], *, start: int = 0, last: bool = False) -> bool:
    with database.transaction() as session:
        return import_jobs.take(
            session, import_id=job_id, lease=LEASE, start=start, items=items, last=last
        ).going_on


def _job_row(database: Database, job_id: str) -> ImportJob:
    with database.transaction(write=False) as session:
        job = session.get(ImportJob, job_id)
        assert job is not None
        return job


def _cards(database: Database, account_id: str) -> list[reading.CardView]:
    with database.transaction(write=False) as session:
        filters = listing.CardFilter(archived="include", sort="oldest")
        return listing.list_cards(
            session, account_id=account_id, secret=SECRET, filters=filters, limit=100
        ).cards


def test_an_entry_becomes_a_link_card_with_everything_it_says(database: Database, account_id: str) -> None:
    job_id = _job(database, account_id)
    entry = Entry(
        place="bookmark 1",
        url="https://example.com/a",
        title="A page",
        notes=["first note", "second note"],
        excerpt="What the page says",
        highlights=[Highlight("a quote", "my note on it", "green")],
        tags=["read", "Read", "later"],
        folder=["Work", "Projects"],
        created_at=1_600_000_000_000,
        favorite=True,
        archived=True,
        unmapped=["icon"],
    )
    assert _take(database, job_id, [entry, Entry(place="bookmark 2", text="a note of mine")])
    link, text = _cards(database, account_id)
    assert (link.type, link.url, link.metadata_title, link.metadata_description) == (
        "link",
        "https://example.com/a",
        "A page",
        "What the page says",
    )
    assert link.notes == "first note\n\nsecond note"  # the highlight is an annotation
    with database.transaction(write=False) as session:
        (kept,) = session.scalars(select(Annotation).where(Annotation.card_id == link.id)).all()
    assert (kept.quote, kept.note, kept.color, kept.start, kept.orphaned) == (
        "a quote",
        "my note on it",
        "green",
        None,  # unplaced until the page is read
        False,
    )
    assert link.tags == ["read", "later"] and link.is_favorited
    assert link.created_at == 1_600_000_000_000 and link.archived_at == link.created_at
    assert (text.type, text.content, text.url) == ("text", "a note of mine", None)
    with database.transaction(write=False) as session:
        folder = session.scalars(select(Folder).where(Folder.account_id == account_id)).one()
    assert folder.name == "Work / Projects" and link.folder_ids == [folder.id]
    job = _job_row(database, job_id)
    assert (job.found, job.created, job.failed, job.position, job.unmapped) == (2, 2, 0, 2, {"icon": 1})


def test_a_deep_folder_path_is_cut_and_an_existing_folder_is_used(
    database: Database, account_id: str
) -> None:
    job_id = _job(database, account_id)
    with database.transaction() as session:
        existing = create_folder(session, account_id=account_id, name="READING").id
    long = "x" * 100
    entries: list[Item] = [
        Entry(place="1", url="https://example.com/1", folder=["a", "b", "c", "d", "e", "f"]),
        Entry(place="2", url="https://example.com/2", folder=[long]),
        Entry(place="3", url="https://example.com/3", folder=["reading"]),
    ]
    _take(database, job_id, entries)
    with database.transaction(write=False) as session:
        names = set(session.scalars(select(Folder.name).where(Folder.account_id == account_id)))
    assert names == {"READING", "a / b / c / d", "x" * import_entries.MAX_FOLDER_NAME}
    assert _cards(database, account_id)[2].folder_ids == [existing]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("javascript:alert(1)", "a javascript: URL"),
        ("data:text/html,<b>x</b>", "a data: URL"),
        ("ftp://example.com/a", "a ftp: URL"),
        ("/relative/path", "no URL"),
        ("https://example.com/" + "a" * 2048, "over 2048 characters"),
    ],
)
def test_an_entry_that_is_no_page_fails_alone_with_its_reason(
    database: Database, account_id: str, url: str, reason: str
) -> None:
    job_id = _job(database, account_id)
    _take(
        database,
        job_id,
        [Entry(place="bookmark 1", url=url), Entry(place="bookmark 2", url="https://example.com/ok")],
    )
    job = _job_row(database, job_id)
    assert (job.found, job.created, job.failed) == (2, 1, 1)
    assert job.failures[0]["entry"] == "bookmark 1" and reason in job.failures[0]["reason"]
    assert [card.url for card in _cards(database, account_id)] == ["https://example.com/ok"]


def test_broken_entries_are_counted_all_and_listed_up_to_a_hundred(
    database: Database, account_id: str
) -> None:
    job_id = _job(database, account_id)
    broken: list[Item] = [Broken(f"line {n}", "the record cannot be read") for n in range(150)]
    _take(database, job_id, broken)
    job = _job_row(database, job_id)
    assert (job.found, job.failed, len(job.failures)) == (150, 150, 100)
    assert job.failures[99] == {"entry": "line 99", "reason": "the record cannot be read"}


def test_invalid_tags_and_tags_past_a_hundred_are_dropped_and_counted(
    database: Database, account_id: str
) -> None:
    job_id = _job(database, account_id)
    tags = [" ", "x" * 65, "ok", *(f"t{n}" for n in range(120))]
    _take(database, job_id, [Entry(place="1", url="https://example.com/a", tags=tags)])
    (card,) = _cards(database, account_id)
    assert len(card.tags) == 100 and card.tags[0] == "ok"
    assert _job_row(database, job_id).unmapped == {"tags (invalid)": 1, "tags (over 100)": 1}  # entries


def test_control_characters_are_dropped_and_a_url_with_spaces_fails(
    database: Database, account_id: str
) -> None:
    job_id = _job(database, account_id)
    items: list[Item] = [
        Entry(
            place="1",
            url="https://example.com/a",
            title="A\x00 title\nsplit",
            notes=["a\x00note\x07"],
            folder=["\u200bWork\x01 "],
        ),
        Entry(place="2", url="https://example.com/a b"),
        Entry(place="3", text="\x00\x01"),
    ]
    _take(database, job_id, items)
    (card,) = _cards(database, account_id)
    assert (card.metadata_title, card.notes) == ("A title split", "anote")
    with database.transaction(write=False) as session:
        assert list(session.scalars(select(Folder.name).where(Folder.account_id == account_id))) == ["Work"]
    job = _job_row(database, job_id)
    assert [f["entry"] for f in job.failures] == ["2", "3"] and "spaces" in job.failures[0]["reason"]


def test_skipped_entries_make_no_folder(database: Database, account_id: str) -> None:
    with database.transaction() as session:
        editing.add_card(session, account_id=account_id, content="https://example.com/a")
    job_id = _job(database, account_id)
    _take(database, job_id, [Entry(place="1", url="https://example.com/a", folder=["New"])])
    with database.transaction(write=False) as session:
        assert list(session.scalars(select(Folder.name).where(Folder.account_id == account_id))) == []


@pytest.mark.parametrize("mode", import_jobs.ON_DUPLICATE)
def test_duplicates_of_a_held_card_and_of_an_earlier_entry(
    database: Database, new_account: Callable[[], str], mode: str
) -> None:
    account_id, other_account = new_account(), new_account()
    with database.transaction() as session:
        held = editing.add_card(
            session, account_id=account_id, content="https://example.com/a", tags=["mine"]
        ).card
        # Another account's card of the same page is no duplicate, and a merge never touches it.
        theirs = editing.add_card(
            session, account_id=other_account, content="https://example.com/b", tags=["other"]
        ).card
        gone = editing.add_card(session, account_id=account_id, content="https://example.com/gone").card
        trash.move_to_trash(session, account_id=account_id, card_id=gone.id)
    job_id = _job(database, account_id, mode)
    items: list[Item] = [
        Entry(
            place="1",
            url="https://EXAMPLE.com/a?utm_source=x",
            tags=["theirs"],
            notes=["their note"],
            favorite=True,
            archived=True,
            folder=["Reading", "Later"],
        ),
        Entry(place="2", url="https://example.com/b", tags=["one"]),
        Entry(place="3", url="https://example.com/gone"),  # in Trash: no duplicate
    ]
    _take(database, job_id, items)
    _take(database, job_id, [Entry(place="4", url="https://example.com/b#x", tags=["two"])], start=3)
    job = _job_row(database, job_id)
    by_url: dict[str, list[reading.CardView]] = {}
    for card in _cards(database, account_id):  # by page: the URLs as spelt in the file differ
        by_url.setdefault(normal_url(card.url or "") or "", []).append(card)
    if mode == "skip":
        assert (job.created, job.skipped, job.merged) == (2, 2, 0)
        assert [c.tags for c in by_url["https://example.com/a"]] == [["mine"]]
        assert [c.tags for c in by_url["https://example.com/b"]] == [["one"]]
    elif mode == "merge":
        assert (job.created, job.skipped, job.merged) == (2, 0, 2)
        (a,) = by_url["https://example.com/a"]
        assert a.id == held.id and a.tags == ["mine", "theirs"] and a.notes == "their note" and a.is_favorited
        assert a.archived_at is not None and len(a.folder_ids) == 1
        with database.transaction(write=False) as session:
            folder = session.get(Folder, a.folder_ids[0])
            assert folder is not None and folder.name == "Reading / Later"
        assert [c.tags for c in by_url["https://example.com/b"]] == [["one", "two"]]
    else:
        assert (job.created, job.skipped, job.merged) == (4, 0, 0)
        assert len(by_url["https://example.com/a"]) == 2 and len(by_url["https://example.com/b"]) == 2
    assert len(by_url["https://example.com/gone"]) == 1  # the one taken; the one in Trash is not listed
    (other,) = _cards(database, other_account)
    assert (other.id, other.tags, other.notes, other.is_favorited) == (theirs.id, ["other"], None, False)


def test_a_batch_is_taken_once_only_from_the_position_it_was_read_at(
    database: Database, account_id: str
) -> None:
    job_id = _job(database, account_id)
    batch: list[Item] = [Entry(place=f"{n}", url=f"https://example.com/{n}") for n in range(3)]
    assert _take(database, job_id, batch)
    assert not _take(database, job_id, batch)  # another worker read position 0 too: nothing taken
    assert not _take(database, job_id, batch, start=5)
    assert len(_cards(database, account_id)) == 3 and _job_row(database, job_id).position == 3


def test_a_run_without_the_lease_takes_nothing(database: Database, account_id: str) -> None:
    job_id = _job(database, account_id)
    with database.transaction() as session:
        taken = import_jobs.take(
            session,
            import_id=job_id,
            lease="run-2",
            start=0,
            items=[Entry(place="1", url="https://example.com/a")],
            last=False,
        )
    assert not taken.going_on and _cards(database, account_id) == []


def test_a_claim_waits_for_a_live_run_and_takes_over_a_stale_or_handed_one(
    database: Database, account_id: str
) -> None:
    job_id = _job(database, account_id)
    with database.transaction() as session:  # the run holding it beat just now
        assert (
            import_jobs.claim(session, import_id=job_id, lease="run-2", handed=None, stale_ms=60_000) is None
        )
    with database.transaction() as session:  # handed on at the end of its slice
        job = import_jobs.claim(session, import_id=job_id, lease="run-2", handed=LEASE, stale_ms=60_000)
        assert job is not None and (job.lease, job.attempts) == ("run-2", 1)
    with database.transaction() as session:
        assert import_jobs.beat(session, import_id=job_id, lease="run-2")
        assert not import_jobs.beat(session, import_id=job_id, lease=LEASE)
    with database.transaction() as session:  # silent for longer than stale_ms: taken over
        job = import_jobs.claim(session, import_id=job_id, lease="run-3", handed=None, stale_ms=0)
        assert job is not None and (job.lease, job.attempts) == ("run-3", 2)


def test_the_last_batch_completes_the_job_and_dooms_its_file(database: Database, account_id: str) -> None:
    job_id = _job(database, account_id)
    assert not _take(database, job_id, [Entry(place="1", url="https://example.com/a")], last=True)
    job = _job_row(database, job_id)
    assert (job.status, job.active_account_id, job.object_key) == ("completed", None, None)
    assert job.completed_at is not None
    with database.transaction(write=False) as session:
        doomed = session.scalar(
            select(func.count())
            .select_from(DoomedObject)
            .where(DoomedObject.key.like(f"accounts/{account_id}/imports/%"))
        )
    assert doomed == 1
    assert not _take(database, job_id, [Entry(place="2", url="https://example.com/b")], start=1)


def test_cancel_ends_an_active_job_and_refuses_an_ended_one(database: Database, account_id: str) -> None:
    job_id = _job(database, account_id)
    with database.transaction() as session:
        assert (
            import_jobs.cancel_import(session, account_id=account_id, import_id=job_id).status == "canceled"
        )
    with database.transaction() as session:  # again: the same answer
        assert (
            import_jobs.cancel_import(session, account_id=account_id, import_id=job_id).status == "canceled"
        )
    assert not _take(database, job_id, [Entry(place="1", url="https://example.com/a")])
    done = _job(database, account_id)
    _take(database, done, [], last=True)
    with pytest.raises(ImportFinished), database.transaction() as session:
        import_jobs.cancel_import(session, account_id=account_id, import_id=done)


def test_cards_are_counted_in_the_accounts_listing(database: Database, account_id: str) -> None:
    job_id = _job(database, account_id)
    _take(database, job_id, [Entry(place=f"{n}", url=f"https://example.com/{n}") for n in range(5)])
    with database.transaction(write=False) as session:
        count = session.scalar(select(func.count()).select_from(Card).where(Card.account_id == account_id))
    assert count == 5


def test_an_entry_failing_while_written_is_taken_alone_and_the_rest_kept(
    database: Database, account_id: str
) -> None:
    job_id = _job(database, account_id)
    items: list[Item] = [
        Entry(place="1", url="https://example.com/1", folder=["F"]),
        Entry(place="2", text="x" * (512 * 1024 + 1)),  # over the card limit, found by add_card
        Entry(place="3", url="https://example.com/3", folder=["F"]),
    ]
    _take(database, job_id, items)
    job = _job_row(database, job_id)
    assert (job.found, job.created, job.failed, job.position) == (3, 2, 1, 3)
    assert job.failures[0]["entry"] == "2" and "bytes" in job.failures[0]["reason"]
    assert [card.url for card in _cards(database, account_id)] == [
        "https://example.com/1",
        "https://example.com/3",
    ]
    with database.transaction(write=False) as session:
        assert list(session.scalars(select(Folder.name).where(Folder.account_id == account_id))) == ["F"]
