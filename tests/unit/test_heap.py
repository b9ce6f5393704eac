"""A server or worker process settles its heap once started (cardvault.heap): what start-up left
is frozen, young collections wait for more new objects, and cycles are still collected. Each
case runs in a process of its own, as settling is for the life of a process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cardvault import heap

REPORT = "import gc; print(gc.get_freeze_count(), gc.get_threshold()[0])"


def _run(code: str, tmp_path: Path, **env: str) -> list[int]:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "CARDVAULT_DATA_DIR": str(tmp_path), "CARDVAULT_DATABASE_URL": "", **env},
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [int(word) for word in done.stdout.split()]


def test_settling_frees_start_up_garbage_freezes_the_rest_and_still_collects_cycles(tmp_path: Path) -> None:
    code = """
import gc, weakref
from cardvault import heap

class Node:
    pass

def cycle():
    node = Node(); node.self = node
    return weakref.ref(node)

kept, left = Node(), cycle()
heap.settle()
scanned = any(o is kept for o in gc.get_objects())  # a frozen object is in no generation
print(int(left() is None), int(not scanned), int(gc.get_freeze_count() > 1000))
later = cycle()
kept_too = [[] for _ in range(heap.YOUNG_THRESHOLD * 2)]  # enough new objects for a collection
print(int(later() is None), gc.get_threshold()[0])
"""
    assert _run(code, tmp_path) == [1, 1, 1, 1, heap.YOUNG_THRESHOLD]


def test_the_server_process_settles_once_its_app_is_built(tmp_path: Path) -> None:
    code = f"from cardvault.handlers.http.app import app_from_env; app_from_env(); {REPORT}"
    frozen, threshold = _run(code, tmp_path)
    assert frozen > 10_000 and threshold == heap.YOUNG_THRESHOLD


def test_a_worker_process_settles_once_its_actors_are_declared(tmp_path: Path) -> None:
    code = f"import cardvault.workers.main; {REPORT}"
    frozen, threshold = _run(
        code, tmp_path, CARDVAULT_REDIS_URL="redis://127.0.0.1:6379/15", CARDVAULT_SPEECH="false"
    )
    assert frozen > 10_000 and threshold == heap.YOUNG_THRESHOLD
