"""A card's file: uploads, what a file is by its bytes, and the bytes an account holds (a
card's replaced thumbnail and captions, edits of the card, are in cardvault.domain.cards)."""
