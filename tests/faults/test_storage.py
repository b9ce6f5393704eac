"""Faults, S3: the file store (SeaweedFS) killed for three seconds and started again on the
same ports with the same data while clients store image files (createUpload, the PUT to S3,
createCard with fileKey and fileEtag) through two API processes and a worker that makes their
renditions, and an export copies the files into its archive. Every answer of our API is a card
or the error body of a passing fault (503 SERVICE_UNAVAILABLE with retryAt), never a 500 or a
hang; once the store is back every card's renditions are made, the export ends ready with
every file, and every acknowledged card is there with its file (harness.faults.storage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.faults.storage import s3_stopped
from tests.conftest import fresh_postgres_database


@pytest.mark.postgres
def test_s3_stopped_and_started_again_loses_no_file_and_every_job_settles(tmp_path: Path) -> None:
    url = fresh_postgres_database("cardvault_faults_s3", "the S3 fault test")
    outcome = s3_stopped(tmp_path, url)
    assert outcome.problems() == [], outcome.row()
    assert outcome.answers["503 SERVICE_UNAVAILABLE"] >= 1, "no createCard met the stopped store"
