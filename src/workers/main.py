"""Entry point of worker processes: ``dramatiq cardvault.workers.main`` (or ``cardvault worker``).

Dramatiq runs this module as each worker process's program: it reads the settings, bootstraps
the process's services on the Redis broker (which declares every actor and gives them the
services), and adds the sweeper."""

import logging

from cardvault import heap, logs
from cardvault.adapters import metrics, ocr, speech
from cardvault.bootstrap import bootstrap
from cardvault.settings import Settings
from cardvault.workers import broker as _broker
from cardvault.workers.sweeper import Sweeper

logs.configure()  # each worker process: JSON lines off a terminal, secrets redacted
_settings = Settings.from_env()
if _settings.speech and speech.installed():
    try:
        speech.check()  # the model files are the pinned ones, or the worker does not start
    except speech.SpeechUnavailable as exc:
        raise SystemExit(f"cardvault: {exc}") from None
_ocr = _settings.ocr
if _ocr.enabled and not ocr.usable_languages(_ocr.languages, _ocr.tessdata):  # said once, at start
    logging.getLogger("cardvault.ocr").warning(
        "OCR is on but cannot read %s here (the ocr extra, or Debian's tesseract-ocr-<lang>, is "
        "missing): the ocr stage is skipped with NO_OCR_ENGINE",
        ",".join(_ocr.languages),
    )
_services = bootstrap(_settings, traced_as="cardvault-worker")
_services.broker.add_middleware(Sweeper())
if _settings.worker_metrics_port is not None:  # the first worker process to bind it answers for all
    metrics.serve(
        _settings.worker_metrics_host,
        _settings.worker_metrics_port,
        metrics.Queues(_broker.queues),
        token=_settings.metrics_token,
    )
heap.settle()  # once every actor is declared and bound (cardvault.heap)
