"""Imports of another service's export: the jobs (jobs), what each entry becomes (entries), the
formats read (formats), and the turns their cards' stages wait for (turns)."""
