"""The README and the docs site: the README stays short and opens with the two commands, and the
site (mkdocs.yml, docs/) builds with every warning an error, loading nothing from outside itself."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_README_LINES = 200
# The README's first block: exactly these two commands, as they have always opened it.
OPENING = (
    "python3 dev.py serve    # run the service on the embedded default; prints its address and an API key",
    "python3 dev.py test     # run the whole test suite: unit on SQLite and PostgreSQL, contract, SDKs,"
    " browser",
)
# What a page may load from elsewhere: nothing (a script, a stylesheet, a font, an image or a frame).
OUTSIDE = re.compile(r"""<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=["']?(?:https?:)?//""", re.I)


def build_site(into: Path) -> Path:
    """Build the docs site strictly into ``into``; the built site's folder."""
    site = into / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's notice of MkDocs 2 on every build
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return site


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_site(tmp_path_factory.mktemp("docs"))


def test_the_readme_is_at_most_200_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES


def test_the_readme_opens_with_the_two_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first_block = re.search(r"^```sh\n(.*?)^```", text, re.M | re.S)
    assert first_block is not None
    assert tuple(first_block.group(1).splitlines()) == OPENING
    before = text[: first_block.start()].strip()
    assert before == "# Card Vault"


def test_the_site_builds_strictly_with_every_guide(site: Path) -> None:
    for page in (
        "getting-started",
        "searching",
        "sync-and-webhooks",
        "imports",
        "files-and-capture",
        "operations",
        "configuration",
        "reference",
        "architecture",
    ):
        assert (site / page / "index.html").is_file(), page
    spec = (ROOT / "openapi" / "cardvault.yaml").read_bytes()
    assert (site / "openapi" / "cardvault.yaml").read_bytes() == spec


def test_the_reference_renders_the_spec_with_swagger_ui_from_the_site_itself(site: Path) -> None:
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    assert "swagger-ui" in reference and "cardvault.yaml" in reference
    bundled = list(site.rglob("swagger-ui-bundle.js"))
    assert bundled, "the plugin's Swagger UI is not in the site"


def test_no_page_loads_anything_from_outside_the_site(site: Path) -> None:
    loading = {
        page.relative_to(site).as_posix(): OUTSIDE.findall(page.read_text(encoding="utf-8"))
        for page in site.rglob("*.html")
    }
    assert {page: found for page, found in loading.items() if found} == {}
    fonts = [p.name for p in site.rglob("*.css") if "fonts.googleapis" in p.read_text(encoding="utf-8")]
    assert fonts == []


def test_no_code_or_doc_cites_a_file_outside_the_repository() -> None:
    texts = [README, ROOT / "mkdocs.yml", *(ROOT / "docs").rglob("*.md")]
    texts += [p for folder in ("src", "tests", "bench") for p in (ROOT / folder).rglob("*.py")]
    outside = re.compile(r"STYLE\.md|\.\./shared|shared[/]notes")
    citing = [p.relative_to(ROOT).as_posix() for p in texts if outside.search(p.read_text(encoding="utf-8"))]
    assert citing == [], "point at docs/architecture.md instead"
