"""Cards: adding and editing them, reading one or a page, their type and colours, and Trash."""
