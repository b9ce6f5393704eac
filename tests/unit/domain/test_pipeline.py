"""The pipeline's table of stages (cardvault.domain.pipeline) on its own: a stage waits only for
one that runs before it, for the same kind of card (that the workers agree with the table is
tests/unit/workers/test_pipeline.py)."""

from __future__ import annotations

from cardvault.domain import pipeline as table


def test_the_table_names_every_stage_it_waits_for_and_runs_them_in_order() -> None:
    for row in table.STAGES:
        for kind, before in row.after.items():
            assert kind in row.kinds
            assert table.ORDER.index(before) < table.ORDER.index(row.name)
            assert kind in table.BY_NAME[before].kinds
