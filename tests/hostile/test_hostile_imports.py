"""Hostile import files sent over the API (uploaded, then startImport) and taken by the embedded
worker: the worst inputs of the formats' readers. Each import completes, the hostile entry fails
alone (listed in the report) and the entries around it are cards; none holds the worker (their
time and memory bounds are proved in tests/hostile/test_hostile_regex.py and the formats' tests)."""

from __future__ import annotations

import io
import zipfile

import pytest

from tests.conftest import Api
from tests.unit.handlers.test_imports import imported

GOOD = '{"url": "https://example.com/a"}', '{"url": "https://example.com/c"}'
OBJECTS = ",".join(["{}"] * 30_000)


def _omnivore_labels() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        metadata = f'[{GOOD[0]}, {{"url": "https://example.com/b", "labels": [{OBJECTS}]}}, {GOOD[1]}]'
        archive.writestr("metadata_0_to_3.json", metadata)
    return out.getvalue()


FILES = {
    "readwise tags never closed": (
        (
            "Title,URL,ID,Document tags,Saved date,Reading progress,Location,Seen\n"
            "A,https://example.com/a,1,[],,0,new,False\n"
            "B,https://example.com/b,2," + "'" + "\\'" * 400_000 + ",,0,new,False\n"
            "C,https://example.com/c,3,['c'],,0,new,False\n"
        ).encode(),
        "readwise",
        None,  # the field is read (no tag in it): three cards
    ),
    "omnivore labels of objects": (_omnivore_labels(), "omnivore", "metadata_0_to_3.json, item 2"),
    "wallabag tags of objects": (
        f'[{GOOD[0]}, {{"url": "https://example.com/b", "tags": [{OBJECTS}]}}, {GOOD[1]}]'.encode(),
        "wallabag",
        "entry 2",
    ),
    "karakeep lists as a list of lists": (
        (
            b'{"bookmarks": [{"content": {"type": "link", "url": "https://example.com/a"}},'
            b'{"content": {"type": "link", "url": "https://example.com/b"}, "lists": [["x"]]},'
            b'{"content": {"type": "link", "url": "https://example.com/c"}}], "lists": []}'
        ),
        "karakeep",
        "bookmark 2",
    ),
    "linkwarden collectionId as a list": (
        (
            '{"username": "u", "collections": [{"id": 1, "name": "One", "links": ['
            f'{GOOD[0]}, {{"url": "https://example.com/b", "collectionId": [1]}}, {GOOD[1]}]}}],'
            '"pinnedLinks": []}'
        ).encode(),
        "linkwarden",
        "link 2",
    ),
}


@pytest.mark.parametrize("name", list(FILES))
def test_a_hostile_entry_fails_alone_and_the_import_completes(api: Api, name: str) -> None:
    data, file_format, failed = FILES[name]
    job = imported(api, data, format=file_format)
    assert job["status"] == "completed", job
    assert [failure["entry"] for failure in job["failures"]] == ([failed] if failed else [])
    assert job["created"] == (2 if failed else 3)
