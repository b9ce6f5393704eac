"""Outside systems behind small interfaces, below the domain: each module imports settings and
nothing else of ours."""
