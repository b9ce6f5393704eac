"""The bootstrap: it builds one process's services and gives them to the actors (an actor reads
them from the broker it is bound to), keeps what a process keeps while it lives across later
bootstraps, connects the changes feed to the webhooks' dispatcher once, and is the only place
anything is wired: importing every module of ours connects nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cardvault.bootstrap import bootstrap
from cardvault.domain import changes
from cardvault.domain.db import Database
from cardvault.domain.pipeline import table
from cardvault.settings import Settings
from cardvault.workers import actors, broker, webhooks
from tests.conftest import app_env


def test_the_services_hold_the_settings_and_database_given_and_the_actors_get_them(
    tmp_path: Path, database: Database
) -> None:
    settings = Settings.from_env(app_env(tmp_path, database))
    services = bootstrap(settings, database=database)
    assert services.settings is settings and services.database is database
    assert services.broker is broker.broker
    assert broker.services_of(broker.broker) is services
    assert services.tracing is None  # no OTLP endpoint: not traced


def test_a_later_bootstrap_is_what_the_actors_get_and_keeps_the_processs_children(
    tmp_path: Path, database: Database
) -> None:
    first = bootstrap(Settings.from_env(app_env(tmp_path, database)), database=database)
    later = bootstrap(Settings.from_env({**app_env(tmp_path, database), "CARDVAULT_AI": "false"}))
    assert broker.services_of(broker.broker) is later
    assert (later.decoder, later.speech, later.browsers) == (first.decoder, first.speech, first.browsers)
    assert later.fetcher is first.fetcher  # the same rules: one client
    assert later.limiter is not first.limiter  # each app counts its own requests
    later.database.dispose()


def test_the_webhooks_dispatcher_listens_to_the_changes_feed_once(tmp_path: Path, database: Database) -> None:
    for _ in range(3):
        bootstrap(Settings.from_env(app_env(tmp_path, database)), database=database)
    assert changes._listeners.count(webhooks.dispatch_webhooks.send) == 1


def test_a_worker_listens_on_every_queue_an_actor_is_declared_on() -> None:
    declared = {actor.queue_name for actor in broker.broker.actors.values()}
    assert actors.queues() == sorted(declared)
    assert set(table.queues()) | {"tags", "trash", "housekeeping", "exports", "imports", "webhooks"} == set(
        actors.queues()
    )


# Run in a process of its own: importing every module of ours, then running an actor.
_IMPORTED_ALONE = """
import pkgutil, importlib, cardvault
from cardvault.domain import changes
from cardvault.workers import broker
names = [m.name for m in pkgutil.walk_packages(cardvault.__path__, "cardvault.")]
for name in names:
    if ".migrations." not in name and not name.endswith(".workers.main"):
        importlib.import_module(name)
assert changes._listeners == [], changes._listeners
try:
    broker.services_of(broker.broker)
except RuntimeError as exc:
    print("no services:", exc)
from cardvault.workers.trash import purge_trash
try:
    purge_trash()
except RuntimeError as exc:
    print("the actor says:", exc)
"""


def test_importing_every_module_wires_nothing_and_an_actor_needs_a_bootstrap(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", _IMPORTED_ALONE],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "CARDVAULT_DATA_DIR": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert ran.returncode == 0, ran.stderr
    assert (
        "no services: no services given to the broker's actors: run cardvault.bootstrap first" in ran.stdout
    )
    assert "the actor says: no services given" in ran.stdout
