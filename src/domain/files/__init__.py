"""A card's file: uploads, what a file is by its bytes, a link's replaced thumbnail, and captions."""
