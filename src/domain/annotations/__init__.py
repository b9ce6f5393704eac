"""Annotations: a passage of a card's text with an optional note and colour, or a note on the
card as a whole. ``anchoring`` finds a quote in a text, ``texts`` says which text of a card is
annotated, ``records`` creates, lists, changes and deletes them, and ``placing`` places them
again when the card's text changes ([Annotations](../../docs/annotations.md))."""
