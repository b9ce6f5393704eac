"""What a stage's attempt can end with, besides its result: every error the pipeline's runner
(cardvault.workers.pipeline) tells apart, in one place.

- StageFailed: it failed; for good, or (``transient``) for a reason that may pass;
- StageSkipped: there is nothing to do for this card (its ``code`` says why);
- Deferred: a resource the stage shares is busy; the attempt is given back, not counted;
- StoreUnreachable: the file store is out of reach (the blob store's own error, raised by the
  adapters): the attempt is given back and the stage sent again later;
- TryAgain: raised by the runner to Dramatiq, whose retries run the attempt again with backoff."""

from __future__ import annotations

from cardvault.adapters.blobs import StoreUnreachable

__all__ = ["Deferred", "StageFailed", "StageSkipped", "StoreUnreachable", "TryAgain"]


class StageFailed(Exception):
    """A stage's attempt failed: ``code`` says why; ``transient`` when a later attempt may
    succeed (a timeout, a server error), else it is failed for good."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.transient = transient


class StageSkipped(Exception):
    """The stage has nothing to do for this card; ``code`` says why (such as ``NO_IMAGE``)."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class Deferred(Exception):
    """A resource the stage shares is busy: the attempt is given back, not counted, with
    ``code`` as its reason, and the stage is sent again ``delay_ms`` later."""

    def __init__(self, code: str, delay_ms: int) -> None:
        super().__init__(code)
        self.code = code
        self.delay_ms = delay_ms


class TryAgain(Exception):
    """A stage's attempt failed for a reason that may pass: Dramatiq retries it with backoff."""
