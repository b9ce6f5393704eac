"""One module per stage of the processing pipeline (its row is in cardvault.domain.pipeline,
its actor is declared from the row by cardvault.workers.pipeline). Each module has:

- ``BASIS``: the card fields its result derives from (the file, the URL): a result made from
  an old value is dropped;
- ``WRITES_TAGS``: its result changes the card's tags (the tag lock is taken before the card);
- ``run(card, lease)``: the slow part, outside any transaction (fetching, decoding); returns
  the result (card fields, or values its ``apply`` understands); raises StageSkipped or
  StageFailed (cardvault.domain.processing) when there is nothing to do or it failed, and
  Deferred when a shared resource is busy;
- ``skipped_by(card)``: the code the result is skipped with when the card, as it is when the
  result is recorded, must not take it (None: it takes it);
- ``apply(session, card, fields)``: writes the result into the card, in the transaction that
  records the stage as completed.

``pictures`` is not a stage: it decodes images and stores the WebP pictures several stages
make."""

from __future__ import annotations

from cardvault.domain.models import Card


class Deferred(Exception):
    """A resource the stage shares is busy: the attempt is given back, not counted, with
    ``code`` as its reason, and the stage is sent again ``delay_ms`` later."""

    def __init__(self, code: str, delay_ms: int) -> None:
        super().__init__(code)
        self.code = code
        self.delay_ms = delay_ms


def set_fields(card: Card, fields: dict[str, object]) -> None:
    """Write a result's card fields into the card: the ``apply`` of most stages."""
    for name, value in fields.items():
        setattr(card, name, value)
