"""Faults, the data disk full: the local-disk store on a tmpfs of 16 MiB of its own, filled for
three seconds by a file that keeps taking every freed byte, while two clients upload images
through two API processes (the PUT to this server's upload URL, then createCard), a worker
writes renditions of cards made just before, and an export starts on the full disk. Every
answer is a success or 503 SERVICE_UNAVAILABLE with retryAt, no partial file stays behind,
every acknowledged card's file is there byte for byte, and the export, given back on the full
disk without using up its attempts, ends ready with every file (harness.faults.disk). The same
holds for the embedded default: one process, with SQLite on the full disk too."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.faults.disk import disk_full
from tests.conftest import fresh_postgres_database


@pytest.mark.postgres
def test_a_full_data_disk_answers_503_keeps_every_acknowledged_file_and_the_export_ends_ready(
    tmp_path: Path,
) -> None:
    url = fresh_postgres_database("cardvault_faults_disk", "the full-disk fault test")
    outcome = disk_full(tmp_path, url)
    assert outcome.problems() == [], outcome.row()
    assert outcome.answers["503 SERVICE_UNAVAILABLE"] >= 1, "the disk was never found full"


def test_the_embedded_default_on_a_full_disk_answers_503_and_loses_nothing(tmp_path: Path) -> None:
    # One process, SQLite on the same full disk: a stage whose result could not be written is
    # taken over once its heartbeat is stale, not after its whole time limit.
    outcome = disk_full(tmp_path, None)
    assert outcome.problems() == [], outcome.row()
    assert outcome.answers["503 SERVICE_UNAVAILABLE"] >= 1, "the disk was never found full"
