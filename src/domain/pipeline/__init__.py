"""The processing pipeline, in one place: its table of stages (``table``), each card's stage
state (``processing``, and what responses show of it: ``status``), what an attempt can end with
(``errors``), and each stage's rules beside its row (``link_metadata``, ``link_preview``,
``capture``, ``renditions``, ``media``, ``transcript``, ``ai``; by name in ``rules``; the
results several stages share in ``results``). How a stage is run (fetching, decoding, a
browser, a provider) is cardvault.workers.stages'; its actors are cardvault.workers.pipeline's."""
