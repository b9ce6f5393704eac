"""Restoring our own export archive: its checks (checks), its cards and folders (cards), a link's
capture (captures), and a restore's bookkeeping on its import job's row (jobs)."""
