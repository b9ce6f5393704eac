"""Cards: adding and editing them, reading one or a page, their type and colours, Trash, and the
ai stage's rules (what text is described and how keywords become the card's AI tags), which
change a card and its tags, so they sit with the cards rather than with the pipeline's table."""
