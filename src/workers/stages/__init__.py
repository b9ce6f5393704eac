"""How each stage of the processing pipeline is run: one module per stage, its ``run(card,
lease)`` the slow part, outside any transaction (fetching, decoding, a browser, a provider),
answering the result (card fields, or values its rules' ``apply`` understands) or raising one of
cardvault.domain.pipeline.errors. The stage's row is in cardvault.domain.pipeline.table, its
rules (what the result derives from, how it is kept) beside it in cardvault.domain.pipeline, and
its actor is declared from the row by cardvault.workers.pipeline.

``pictures`` is not a stage: it decodes the images several stages make, in the decoder's child."""
