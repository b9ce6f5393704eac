"""The cyclic garbage collector, tuned once a server or worker process has started.

A process holds some 130,000 objects once its modules are imported and its app is built, and
keeps them for life. CPython's collector scans all of them in each full collection, and starts
one whenever a quarter as many objects again have outlived two younger collections: a page of
200 extended cards leaves thousands, so reading the changes feed paid a 40 ms full collection
every 20,000 cards, a quarter of its time (bench/bench_feed.py). ``settle`` moves what start-up
left into the permanent generation, which no collection scans (``gc.freeze``), and lets a young
collection wait for more new objects than one page makes, so that most of a request's objects
are freed by their reference counts before any collection looks at them. Cycles are still
collected; garbage waits for at most YOUNG_THRESHOLD more allocations than before.
"""

from __future__ import annotations

import gc

# Net new container objects before a young collection (CPython's default is 700): above what
# one request keeps alive at once (a page of 200 extended cards is about 2,000).
YOUNG_THRESHOLD = 10_000


def settle() -> None:
    """Collect what start-up left as garbage, freeze what remains and raise the young
    threshold; called once per process, after start-up (not by tests that build many apps)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
