"""Cards: adding and editing them, reading one or a page, their type and colours, and Trash.

The ai stage's rules (``ai``: what text of a card is described, how keywords become its AI tags)
live here, not beside the pipeline's table: they change a card and its tags, nothing else."""
