"""Folders on a real database (SQLite and PostgreSQL): names unique in an account ignoring case,
cards added and removed one by one (a bad id never fails the others), counts without Trash,
pages by name that a rename or delete does not shift, and another account's folder missing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from cardvault.domain import folders
from cardvault.domain.cards import editing, trash
from cardvault.domain.db import Database
from cardvault.domain.errors import FolderExists, InvalidCursor, NotFound

SECRET = "f" * 40


def _folder(database: Database, account_id: str, name: str, color: str | None = None) -> str:
    with database.transaction() as session:
        return folders.create_folder(session, account_id=account_id, name=name, color=color).id


def _cards(database: Database, account_id: str, count: int) -> list[str]:
    with database.transaction() as session:
        return [
            editing.add_card(session, account_id=account_id, content=f"card {n}").card.id
            for n in range(count)
        ]


def _add(database: Database, account_id: str, folder_id: str, card_ids: list[str]) -> folders.Membership:
    with database.transaction() as session:
        return folders.add_cards(session, account_id=account_id, folder_id=folder_id, card_ids=card_ids)


def _names(database: Database, account_id: str, limit: int, cursor: str | None = None) -> folders.FolderPage:
    with database.transaction(write=False) as session:
        return folders.list_folders(session, account_id=account_id, secret=SECRET, limit=limit, cursor=cursor)


class TestNames:
    def test_a_name_is_trimmed_and_unique_in_the_account_ignoring_case(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        account_id = new_account()
        _folder(database, account_id, "  Recipes ")
        with pytest.raises(FolderExists) as caught:
            _folder(database, account_id, "RECIPES")
        assert caught.value.details == {"name": "RECIPES"}
        _folder(database, new_account(), "Recipes")  # another account's names are its own

    def test_a_folder_is_renamed_recoloured_and_its_colour_cleared(
        self, database: Database, account_id: str
    ) -> None:
        folder_id = _folder(database, account_id, "Work", "red")
        with database.transaction() as session:
            folders.update_folder(
                session, account_id=account_id, folder_id=folder_id, name=" Jobs ", color="blue"
            )
        with database.transaction() as session:
            folder = folders.update_folder(session, account_id=account_id, folder_id=folder_id, color=None)
            assert (folder.name, folder.color) == ("Jobs", None)
        with database.transaction() as session:  # a name alone leaves the colour
            folders.update_folder(session, account_id=account_id, folder_id=folder_id, color="teal")
            folder = folders.update_folder(session, account_id=account_id, folder_id=folder_id, name="Jobs 2")
            assert (folder.name, folder.color) == ("Jobs 2", "teal")

    def test_recasing_its_own_name_is_allowed_and_taking_anothers_is_not(
        self, database: Database, account_id: str
    ) -> None:
        work, home = _folder(database, account_id, "work"), _folder(database, account_id, "Home")
        with database.transaction() as session:
            assert (
                folders.update_folder(session, account_id=account_id, folder_id=work, name="WORK").name
                == "WORK"
            )
        with pytest.raises(FolderExists), database.transaction() as session:
            folders.update_folder(session, account_id=account_id, folder_id=home, name="Work")
        with database.transaction(write=False) as session:
            assert folders.get_folder(session, account_id=account_id, folder_id=home).name == "Home"

    def test_another_accounts_folder_is_missing_to_every_operation(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        owner, other = new_account(), new_account()
        folder_id = _folder(database, owner, "Mine")
        (card,) = _cards(database, other, 1)
        calls: list[Callable[..., object]] = [
            lambda s: folders.get_folder(s, account_id=other, folder_id=folder_id),
            lambda s: folders.update_folder(s, account_id=other, folder_id=folder_id, name="Theirs"),
            lambda s: folders.delete_folder(s, account_id=other, folder_id=folder_id),
            lambda s: folders.add_cards(s, account_id=other, folder_id=folder_id, card_ids=[card]),
            lambda s: folders.remove_cards(s, account_id=other, folder_id=folder_id, card_ids=[card]),
        ]
        for call in calls:
            with pytest.raises(NotFound), database.transaction() as session:
                call(session)
        with database.transaction(write=False) as session:
            assert folders.get_folder(session, account_id=owner, folder_id=folder_id).name == "Mine"
            assert folders.folder_names(session, account_id=other, folder_ids=[folder_id]) == []


class TestCards:
    def test_each_id_lands_where_it_belongs(self, database: Database, new_account: Callable[[], str]) -> None:
        account_id, other = new_account(), new_account()
        folder_id = _folder(database, account_id, "F")
        kept, again, trashed = _cards(database, account_id, 3)
        (theirs,) = _cards(database, other, 1)
        _add(database, account_id, folder_id, [again])
        with database.transaction() as session:
            trash.move_to_trash(session, account_id=account_id, card_id=trashed)
        result = _add(
            database, account_id, folder_id, [kept, again, kept, trashed, theirs, "crd_missing", "bad id!"]
        )
        assert result == folders.Membership(
            updated=[kept, again], failed=[trashed, theirs, "crd_missing", "bad id!"], limited=[]
        )
        with database.transaction(write=False) as session:
            card = editing.get_card(session, account_id=account_id, card_id=kept)
            assert card.folder_ids == [folder_id] and card.updated_at >= card.created_at

    def test_a_full_folder_or_card_limits_the_rest(
        self, database: Database, account_id: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(folders, "MAX_CARDS_PER_FOLDER", 2)
        monkeypatch.setattr(folders, "MAX_FOLDERS_PER_CARD", 1)
        first, second = _folder(database, account_id, "First"), _folder(database, account_id, "Second")
        cards = _cards(database, account_id, 3)
        assert _add(database, account_id, first, cards) == folders.Membership(cards[:2], [], [cards[2]])
        assert _add(database, account_id, second, cards) == folders.Membership([cards[2]], [], cards[:2])

    def test_removing_takes_cards_out_and_keeps_them(self, database: Database, account_id: str) -> None:
        folder_id = _folder(database, account_id, "F")
        inside, outside = _cards(database, account_id, 2)
        _add(database, account_id, folder_id, [inside])
        with database.transaction() as session:
            result = folders.remove_cards(
                session, account_id=account_id, folder_id=folder_id, card_ids=[inside, outside, "crd_missing"]
            )
        assert result == folders.Membership([inside], [outside, "crd_missing"], [])
        with database.transaction(write=False) as session:
            assert editing.get_card(session, account_id=account_id, card_id=inside).folder_ids == []
            assert folders.card_counts(session, [folder_id]) == {folder_id: 0}

    def test_counts_leave_out_trash_and_deleting_a_folder_keeps_its_cards(
        self, database: Database, account_id: str
    ) -> None:
        full, empty = _folder(database, account_id, "Full"), _folder(database, account_id, "Empty")
        cards = _cards(database, account_id, 3)
        _add(database, account_id, full, cards)
        with database.transaction() as session:
            trash.move_to_trash(session, account_id=account_id, card_id=cards[0])
        with database.transaction(write=False) as session:
            assert folders.card_counts(session, [full, empty]) == {full: 2, empty: 0}
            assert folders.card_counts(session, []) == {}
        with database.transaction() as session:
            folders.delete_folder(session, account_id=account_id, folder_id=full)
        with database.transaction(write=False) as session:
            assert [
                editing.get_card(session, account_id=account_id, card_id=c).folder_ids for c in cards
            ] == [[]] * 3
            with pytest.raises(NotFound):
                folders.get_folder(session, account_id=account_id, folder_id=full)


class TestListing:
    def test_pages_go_by_name_ignoring_case_with_the_total(self, database: Database, account_id: str) -> None:
        for name in ["beta", "Alpha", "gamma", "Delta", "epsilon"]:
            _folder(database, account_id, name)
        seen, cursor = [], None
        while True:
            page = _names(database, account_id, 2, cursor)
            assert page.total == 5
            seen.append([f.name for f in page.folders])
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        assert seen == [["Alpha", "beta"], ["Delta", "epsilon"], ["gamma"]]

    def test_renaming_or_deleting_the_last_folder_of_a_page_moves_nothing(
        self, database: Database, account_id: str
    ) -> None:
        ids = {name: _folder(database, account_id, name) for name in ["a", "b", "c", "d"]}
        page = _names(database, account_id, 2)
        with database.transaction() as session:
            folders.update_folder(session, account_id=account_id, folder_id=ids["b"], name="z")
            folders.delete_folder(session, account_id=account_id, folder_id=ids["a"])
        assert [f.name for f in _names(database, account_id, 2, page.next_cursor).folders] == ["c", "d"]

    def test_a_cursor_of_another_account_is_refused(
        self, database: Database, new_account: Callable[[], str]
    ) -> None:
        mine, other = new_account(), new_account()
        for name in ["a", "b"]:
            _folder(database, mine, name)
        cursor = _names(database, mine, 1).next_cursor
        with pytest.raises(InvalidCursor):
            _names(database, other, 1, cursor)

    def test_folder_names_are_the_accounts_by_name(self, database: Database, account_id: str) -> None:
        ids = [_folder(database, account_id, name) for name in ["b", "A", "c"]]
        with database.transaction(write=False) as session:
            assert folders.folder_names(session, account_id=account_id, folder_ids=[*ids[:2], "fld_x"]) == [
                "A",
                "b",
            ]
            assert folders.folder_names(session, account_id=account_id, folder_ids=[]) == []
