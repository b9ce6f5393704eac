"""JSON values built from the parser's events: exactly what the text holds wherever chunks
end, each value under its budget (values, nesting, list items, characters: past any of them
the value alone fails, in bounded memory, and the values around it are built), and strings
over the limit never built."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cardvault.domain.portability.imports.formats import streamed

JSON_TEXT = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**62), 2**62)  # (yajl reads no wider integers)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab"\\\n\x00é€😀/')),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=16,
)


def _chunked(data: bytes, chunk: int) -> Iterator[bytes]:
    return (data[i : i + chunk] for i in range(0, len(data), chunk))


@settings(max_examples=300, deadline=None)
@given(
    document=st.dictionaries(st.sampled_from(["a", "items", "b"]), JSON_TEXT, max_size=3),
    items=st.lists(JSON_TEXT, max_size=5),
    chunk=st.integers(1, 40),
)
def test_the_values_at_the_path_are_built_as_the_text_holds_them(
    document: dict[str, Any], items: list[Any], chunk: int
) -> None:
    document["items"] = items
    data = json.dumps(document).encode()
    assert list(streamed.objects(_chunked(data, chunk), "items.item")) == json.loads(data)["items"]


def _kinds(values: list[Any]) -> list[str]:
    return [value.reason if isinstance(value, streamed.TooBig) else json.dumps(value) for value in values]


@pytest.mark.parametrize(
    ("middle", "reason"),
    [
        ('{"labels": [' + ",".join(["{}"] * 20_001) + "]}", "a list of it holds over 20,000 items"),
        ('{"a": [' + ",".join(["[1, 2, 3, 4]"] * 20_001) + "]}", "it holds over 100,000 values"),
        ('{"a": ' + "[" * 33 + "]" * 33 + "}", "it nests over 32 levels deep"),
        ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", "it nests over 32 levels deep"),
        ('{"a": [' + ",".join([json.dumps("x" * 1024 * 1024)] * 9) + "]}", "its text is over 8 MiB"),
        ("{" + ",".join(f'"{"k" * 1000}{n}": 0' for n in range(9000)) + "}", "its text is over 8 MiB"),
    ],
)
@pytest.mark.parametrize("chunk", [7, 64 * 1024])
def test_a_value_past_its_budget_fails_alone(middle: str, reason: str, chunk: int) -> None:
    data = f'[{{"n": 1}}, {middle}, {{"n": [3, {{"x": null}}]}}]'.encode()
    if chunk == 7 and len(data) > 1024 * 1024:
        chunk = 4096  # (a byte-sized chunk of megabytes is slow, and tells nothing more)
    found = list(streamed.objects(_chunked(data, chunk), "item"))
    assert _kinds(found) == ['{"n": 1}', reason, '{"n": [3, {"x": null}]}']


def test_a_value_just_within_its_budget_is_built() -> None:
    middle = {"labels": [{}] * 20_000, "deep": json.loads("[" * 31 + "]" * 31)}
    data = json.dumps([middle]).encode()
    assert list(streamed.objects(_chunked(data, 4096), "item")) == [middle]


def test_values_at_other_paths_cost_nothing_however_big() -> None:
    data = b'{"other": [' + b",".join([b"[{}]"] * 50_000) + b'], "items": [{"a": 1}]}'
    assert list(streamed.objects(_chunked(data, 4096), "items.item")) == [{"a": 1}]


@settings(max_examples=300, deadline=None)
@given(value=JSON_TEXT, ascii_only=st.booleans(), chunk=st.integers(1, 40), limit=st.integers(2, 60))
def test_the_string_guard_replaces_exactly_the_strings_over_the_limit_wherever_chunks_end(
    value: Any, ascii_only: bool, chunk: int, limit: int
) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only).encode()

    def cut(text: str) -> str:
        return text if len(json.dumps(text, ensure_ascii=ascii_only).encode()) <= limit else "\x00"

    def expected(node: Any) -> Any:
        if isinstance(node, str):
            return cut(node)
        if isinstance(node, list):
            return [expected(item) for item in node]
        if isinstance(node, dict):  # keys are strings too (two cut keys merge, the last kept)
            return {cut(key): expected(item) for key, item in node.items()}
        return node

    guard = streamed._Strings()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(streamed, "STRING_LIMIT", limit)
        out = b"".join(guard(data[i : i + chunk] for i in range(0, len(data), chunk)))
    kept = json.loads(out)
    assert kept == expected(value)


def test_a_passed_member_is_neither_built_nor_counted() -> None:
    links = ",".join(['{"url": "u", "tags": [{"name": "t"}]}'] * 50_000)
    data = f'{{"collections": [{{"id": 1, "links": [{links}], "name": "One"}}]}}'.encode()
    found = list(streamed.objects(_chunked(data, 4096), "collections.item", frozenset({"links"})))
    assert found == [{"id": 1, "name": "One"}]
