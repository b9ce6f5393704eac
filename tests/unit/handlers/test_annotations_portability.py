"""Annotations in our own export: each card's in cards.json, restored by an import of the
archive into another account with their quotes, notes, colours, places and times."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable

from tests.conftest import Api
from tests.unit.handlers.test_annotations import TEXT, annotate, listed
from tests.unit.handlers.test_exports import wait_for_export
from tests.unit.handlers.test_imports import imported
from tests.unit.handlers.test_uploads import _get

KEPT = ("quote", "prefix", "suffix", "position", "orphaned", "note", "color", "createdAt")


def test_an_export_carries_them_and_its_import_restores_them(
    files_api: Api, new_api: Callable[[], Api]
) -> None:
    card = files_api.create(content=TEXT, tags=["annotated"])
    made = [
        annotate(files_api, card["id"], quote="the cat", prefix="dog, and ", note="which one?", color="pink"),
        annotate(files_api, card["id"], quote="sat on the mat"),
        annotate(files_api, card["id"], note="A card-level note."),
    ]
    assert files_api.post("/v1/exports").status_code == 202
    job = wait_for_export(files_api)
    assert job["status"] == "ready", job
    data = _get(files_api, job["downloadUrl"]).content
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        (record,) = json.loads(archive.read("cards.json"))["cards"]
    assert [a["quote"] for a in record["annotations"]] == ["sat on the mat", "the cat", None]
    other = new_api()
    job = imported(other, data)
    assert (job["status"], job["created"]) == ("completed", 1), job
    (copy,) = other.get("/v1/cards").json()["items"]
    assert copy["annotationCount"] == 3
    restored = listed(other, copy["id"])
    original = listed(files_api, card["id"])
    assert [{k: a[k] for k in KEPT} for a in restored] == [{k: a[k] for k in KEPT} for a in original]
    assert {a["cardId"] for a in restored} == {copy["id"]}
    assert {a["id"] for a in restored}.isdisjoint(a["id"] for a in made)
