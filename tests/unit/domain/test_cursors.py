"""Page cursors: a position comes back unchanged through its cursor, and a cursor that was altered,
made up, or made for another query (scope) or with another secret is refused as InvalidCursor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cardvault.domain.cursors import decode_cursor, encode_cursor
from cardvault.domain.errors import InvalidCursor, InvalidInput

SECRET = "s" * 48
SCOPE = "cards:acc_1:sort=createdAt:desc"


@given(
    st.lists(
        st.one_of(st.integers(min_value=-(2**63), max_value=2**63), st.text(max_size=40)),
        min_size=1,
        max_size=3,
    )
)
def test_a_position_comes_back_unchanged(position: list[int | str]) -> None:
    cursor = encode_cursor(SECRET, scope=SCOPE, position=position)
    assert decode_cursor(SECRET, cursor, scope=SCOPE, size=len(position)) == position


def test_a_cursor_is_url_safe_and_does_not_name_the_scope() -> None:
    cursor = encode_cursor(SECRET, scope=SCOPE, position=[1764605400000, "Straße ü/+="])
    assert set(cursor) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
    assert "acc_1" not in cursor and "=" not in cursor


def test_a_cursor_of_another_query_is_refused() -> None:
    cursor = encode_cursor(SECRET, scope=SCOPE, position=[5, 7])
    with pytest.raises(InvalidCursor) as caught:
        decode_cursor(SECRET, cursor, scope="cards:acc_2:sort=createdAt:desc", size=2)
    assert "same filters and sort" in caught.value.message


def test_a_cursor_made_with_another_secret_is_refused() -> None:
    cursor = encode_cursor("t" * 48, scope=SCOPE, position=[5, 7])
    with pytest.raises(InvalidCursor):
        decode_cursor(SECRET, cursor, scope=SCOPE, size=2)


def test_a_changed_position_is_refused_though_it_keeps_the_signature() -> None:
    genuine = encode_cursor(SECRET, scope=SCOPE, position=[5, 7])
    other = encode_cursor(SECRET, scope=SCOPE, position=[5, 8])
    forged = other.partition(".")[0] + "." + genuine.partition(".")[2]
    with pytest.raises(InvalidCursor):
        decode_cursor(SECRET, forged, scope=SCOPE, size=2)


def test_every_single_character_changed_is_refused() -> None:
    cursor = encode_cursor(SECRET, scope=SCOPE, position=[1764605400000, 42])
    for index, char in enumerate(cursor):
        altered = cursor[:index] + ("A" if char != "A" else "B") + cursor[index + 1 :]
        with pytest.raises(InvalidCursor):
            decode_cursor(SECRET, altered, scope=SCOPE, size=2)


@pytest.mark.parametrize(
    "garbage", ["", ".", "abc", "abc.", ".abc", "é.ü", "a" * 5000, "W10.W10.W10", "\x00"]
)
def test_garbage_is_refused_as_an_invalid_cursor(garbage: str) -> None:
    with pytest.raises(InvalidCursor) as caught:
        decode_cursor(SECRET, garbage, scope=SCOPE, size=2)
    assert isinstance(caught.value, InvalidInput)  # answered as the client's mistake (400)


@pytest.mark.parametrize("position", [[5], [5, 7, 9], [5, 7.5], [5, True], [5, None], [[5], 7]])
def test_a_signed_position_of_the_wrong_shape_is_refused(position: list) -> None:  # type: ignore[type-arg]
    cursor = encode_cursor(SECRET, scope=SCOPE, position=position)
    with pytest.raises(InvalidCursor) as caught:
        decode_cursor(SECRET, cursor, scope=SCOPE, size=2)
    assert caught.value.message == "The cursor is not valid."
