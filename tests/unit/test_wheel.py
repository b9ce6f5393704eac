"""The built wheel works on its own: it holds every file of src/ and the spec, and a fresh virtual
environment with only the wheel installed serves the spec, the pages and a migrated database."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import time
import venv
import zipfile
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import NamedTuple

import httpx
import pytest
import yaml
from alembic.script import ScriptDirectory

from harness.servers import free_port, stop

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
SPEC = ROOT / "openapi" / "cardvault.yaml"


def _run(*command: str | Path, cwd: Path | None = None) -> str:
    result = subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def _checkout_files(folder: str, names: list[str]) -> set[str]:
    """What a fresh clone would not have: a left-over *.egg-info, whose SOURCES.txt setuptools
    adds to every sdist (so a package dropped from pyproject.toml would still ship), caches,
    environments and build output."""
    junk = {
        name for name in names if name.startswith(".") or name.endswith(".egg-info") or name == "__pycache__"
    }
    if Path(folder) == ROOT:
        junk |= {"build", "dist", "var", "node_modules", "reports"} & set(names)
    return junk


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built as a release is, from a copy of the checkout: the sdist first, the wheel
    from it, with this environment's setuptools (no download)."""
    tree = tmp_path_factory.mktemp("checkout") / "cardvault"
    shutil.copytree(ROOT, tree, ignore=_checkout_files)
    dist = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, tree)
    (built,) = dist.glob("*.whl")
    return built


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding the wheel; return its bin directory."""
    env = tmp_path_factory.mktemp("venv")
    venv.create(env, with_pip=False, symlinks=True)
    bin_dir = env / "bin"
    python = bin_dir / "python"
    pip = (sys.executable, "-m", "pip", "--python", python)
    _run(*pip, "install", "--quiet", "--no-deps", "--no-index", wheel)
    # The dependencies come from this environment's site-packages, added after the new one's
    # (a plain path: the editable install's finder, itself a .pth file there, is not run).
    site_packages = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    ours = {sysconfig.get_paths()[name] for name in ("purelib", "platlib")}
    (site_packages / "cardvault_test_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    return bin_dir


def _shipped_files() -> set[str]:
    """What the wheel must hold: every file under src/, and the spec with its package."""
    files = {
        "cardvault/" + path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*")
        if path.is_file()
        and "__pycache__" not in path.parts
        and not any(part.startswith(".") for part in path.relative_to(SRC).parts)
    }
    return files | {"cardvault/openapi/__init__.py", "cardvault/openapi/cardvault.yaml"}


def test_the_wheel_holds_every_package_module_and_data_file_of_src(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = sorted(_shipped_files() - names)
        assert not missing, (
            "missing from the wheel (list a new package under [tool.setuptools] packages and a data "
            f"file under [tool.setuptools.package-data] in pyproject.toml): {missing}"
        )
        assert "cardvault/py.typed" in names
        # The harness, the benchmarks and the tests stay in the checkout.
        tops = {name.split("/")[0] for name in names}
        assert {top for top in tops if not top.endswith(".dist-info")} == {"cardvault"}, tops
        assert archive.read("cardvault/openapi/cardvault.yaml") == SPEC.read_bytes()


def test_the_installed_package_is_the_wheels_copy(installed: Path, tmp_path: Path) -> None:
    where = _run(
        installed / "python",
        "-c",
        "import cardvault, cardvault.spec as s; print(cardvault.__file__); print(s.SPEC_PATH)",
        cwd=tmp_path,
    ).split()
    env = installed.parent
    assert [Path(path).is_relative_to(env) for path in where] == [True, True], where
    assert where[1].endswith("cardvault/openapi/cardvault.yaml")


class Served(NamedTuple):
    url: str
    api_key: str  # the local account's, which `cardvault serve` prints
    data_dir: Path


@pytest.fixture(scope="module")
def served(installed: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`cardvault serve` from the fresh environment on the embedded default (SQLite in a data
    directory of its own)."""
    tmp_path = tmp_path_factory.mktemp("serve")
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("CARDVAULT_", "PYTHON", "VIRTUAL_ENV"))},
        "CARDVAULT_DATA_DIR": str(tmp_path / "data"),
        "CARDVAULT_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "CARDVAULT_VALIDATE_RESPONSES": "true",
        "CARDVAULT_SPEECH": "false",  # else it hashes the Whisper weights first, which are not ours
    }
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(installed / "cardvault"), "serve", "--port", str(port)],
            cwd=tmp_path,  # not the checkout, whose openapi/ folder the wheel must not need
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{base}/v1/openapi.yaml", timeout=2)
                break
            except httpx.TransportError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"cardvault serve did not start:\n{log.read_text()[-3000:]}")
                time.sleep(0.1)
        key = log.read_text().split("API key of the local account: ", 1)[1].split()[0]
        yield Served(base, key, tmp_path / "data")
    finally:
        stop(process)


def test_the_installed_service_serves_the_spec_on_disk(served: Served) -> None:
    base = served.url
    as_json = httpx.get(f"{base}/v1/openapi.json")
    as_yaml = httpx.get(f"{base}/v1/openapi.yaml")
    assert as_json.status_code == 200 and as_json.json() == yaml.safe_load(SPEC.read_text())
    assert as_yaml.status_code == 200 and as_yaml.content == SPEC.read_bytes()


def test_the_installed_service_renders_its_pages_and_stylesheet(served: Served) -> None:
    base = served.url
    page = httpx.get(f"{base}/sign-in")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<link rel="stylesheet" href="/static/cardvault.css">' in page.text  # base.html
    assert '<form method="post" action="/sign-in"' in page.text  # sign_in.html
    stylesheet = httpx.get(f"{base}/static/cardvault.css")
    assert stylesheet.status_code == 200
    assert stylesheet.content == (SRC / "handlers" / "web" / "static" / "cardvault.css").read_bytes()


def test_the_installed_service_migrates_its_database_to_the_newest_revision(served: Served) -> None:
    cards = httpx.get(f"{served.url}/v1/cards", headers={"Authorization": f"Bearer {served.api_key}"})
    assert cards.status_code == 200 and cards.json()["items"] == []
    with closing(sqlite3.connect(served.data_dir / "cardvault.db")) as db:
        (revision,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
    assert revision == ScriptDirectory(str(SRC / "domain" / "migrations")).get_current_head()
