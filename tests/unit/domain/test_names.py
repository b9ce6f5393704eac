"""A name's comparison key: case and canonical equivalence folded."""

from __future__ import annotations

from cardvault.domain.names import tag_key


def test_keys_fold_case_and_canonical_equivalence() -> None:
    assert tag_key("Caf\u00e9") == tag_key("CAFE\u0301")
    assert tag_key("Work") == tag_key("wORK")
