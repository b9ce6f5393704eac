"""House rules that a machine can check: lint, formatting, types, the direction of the layers,
that the benchmarks and the harness stand on their own, and that the unit tests mirror src/."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SRC, UNIT = ROOT / "src", ROOT / "tests" / "unit"


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_nothing() -> None:
    result = run(str(BIN / "ruff"), "check", "src", "tests", "bench", "harness")
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_formatted() -> None:
    result = run(str(BIN / "ruff"), "format", "--check", "src", "tests", "bench", "harness")
    assert result.returncode == 0, result.stdout + result.stderr


def test_layers_import_in_one_direction() -> None:
    result = run(str(BIN / "lint-imports"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_finds_nothing() -> None:
    # No arguments: what to check, and how strictly, is pyproject.toml's [tool.mypy]. A fresh
    # clone runs cold (about 20 s); with its .mypy_cache a run takes about a second.
    result = run(sys.executable, "-m", "mypy")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout, result.stdout + result.stderr


# Who may import whom among the top-level packages beside src/: the tests and the benchmarks
# both stand on the harness, and the harness on neither.
FORBIDDEN = {"bench": {"tests"}, "harness": {"tests", "bench"}, "tests": {"bench"}}


def test_tests_bench_and_harness_import_in_one_direction_and_no_private_names() -> None:
    found = []
    for top, forbidden in FORBIDDEN.items():
        for path in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Import):
                    found += [
                        f"{where} imports {a.name}" for a in node.names if a.name.split(".")[0] in forbidden
                    ]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    if node.module.split(".")[0] in forbidden:
                        found.append(f"{where} imports from {node.module}")
                    elif node.module.split(".")[0] in {"bench", "harness"}:
                        private = [a.name for a in node.names if a.name.startswith("_")]
                        found += [f"{where} imports {node.module}.{name}" for name in private]
    assert found == []


# The unit tests mirror src/: tests/unit/<folders>/test_<module>.py, or test_<module>_<aspect>.py,
# where <module> is a module or sub-package at that path of src/ ("init" for a package's
# __init__.py). The spec, openapi/cardvault.yaml, ships as the package cardvault.openapi: its tests
# are tests/unit/openapi/test_cardvault.py. These check the repository as a whole (test_docs.py: the
# README and the docs site):
WHOLE_REPOSITORY_TESTS = {"test_docs.py", "test_style.py", "test_wheel.py"}
SPEC = "openapi/cardvault.yaml"

# The modules of src/ with no test file of their own: the test file that exercises each (directly
# or through the HTTP operation that calls it), or why there is nothing to test on its own.
DECLARATIONS = "declarations only; every test that saves or reads a row uses them"
COVERED_ELSEWHERE = {
    # /mcp's server and its internal requests: driven through the endpoint by the SDK's client.
    "handlers/http/mcp_calls.py": "tests/unit/handlers/http/test_mcp_endpoint.py",
    "handlers/http/mcp_server.py": "tests/unit/handlers/http/test_mcp_endpoint.py",
    "domain/feed.py": "tests/unit/handlers/test_changes.py",
    "domain/annotations/placing.py": "tests/unit/handlers/test_annotations.py",
    "domain/annotations/records.py": "tests/unit/handlers/test_annotations.py",
    "domain/annotations/texts.py": "tests/unit/handlers/test_annotations.py",
    "domain/subscriptions.py": "tests/unit/workers/test_subscriptions.py",
    "domain/portability/imports/entries.py": "tests/unit/domain/portability/imports/test_jobs.py",
    "domain/portability/imports/turns.py": "tests/unit/workers/test_imports_bounds.py",
    "domain/portability/restore/jobs.py": "tests/unit/workers/test_restores.py",
    "domain/cards/extended.py": "tests/unit/handlers/test_changes.py",
    "domain/cards/facets.py": "tests/unit/handlers/test_cards_search.py",
    "domain/cards/ranking.py": "tests/unit/domain/cards/test_listing.py",
    "domain/cards/shapes.py": "tests/unit/domain/cards/test_listing.py",
    "health.py": "tests/unit/handlers/test_system.py",
    "settings/__init__.py": "tests/unit/settings/test_service.py",
    "settings/local.py": "tests/unit/settings/test_service.py",
    "services.py": "tests/unit/test_bootstrap.py",
    "spec.py": "tests/unit/openapi/test_cardvault.py",
    "domain/search/matching.py": "tests/unit/handlers/test_cards_search.py",
    "domain/search/stopwords.py": "tests/unit/domain/search/test_vocabulary.py",
    "workers/actors.py": "tests/unit/workers/test_embedded.py",
    "adapters/capture/__init__.py": "tests/browser/test_capture_pages.py",
    "adapters/capture/steps.py": "tests/browser/test_capture_pages.py",
    "adapters/capture/environment.py": "tests/browser/test_capture_environment.py",
    "adapters/deadlines.py": "tests/unit/adapters/test_fetcher.py",
    "workers/export_archive.py": "tests/unit/workers/test_exports.py",
    "workers/restored_captures.py": "tests/unit/handlers/cli/test_restore.py",
    "adapters/decoder/jobs.py": "tests/unit/adapters/decoder/test_init.py",
    "adapters/media/__init__.py": "tests/unit/workers/stages/test_media.py",
    "adapters/pages/categories.py": "tests/unit/adapters/pages/test_init.py",
    "adapters/pages/main_text.py": "tests/unit/adapters/pages/test_init.py",
    "adapters/pages/open_graph.py": "tests/unit/adapters/pages/test_init.py",
    "domain/clock.py": "one call of time.time(); every test that checks a time uses it",
    "domain/files/uploads.py": "tests/unit/handlers/test_uploads.py",
    "domain/files/doomed.py": "tests/unit/workers/test_files.py",
    "domain/files/held.py": "tests/unit/domain/files/test_quotas.py",
    "domain/guards/rate_limits.py": "tests/unit/handlers/http/test_operations_rate_limits.py",
    "domain/migrations/doomed.py": "tests/unit/domain/migrations/test_versions.py",
    "domain/migrations/env.py": "tests/unit/domain/migrations/test_versions.py",
    "domain/models/__init__.py": DECLARATIONS,
    "domain/models/auth.py": DECLARATIONS,
    "domain/models/cards.py": DECLARATIONS,
    "domain/models/webhooks.py": DECLARATIONS,
    "domain/models/shares.py": DECLARATIONS,
    "domain/models/subscriptions.py": DECLARATIONS,
    "domain/models/changes.py": DECLARATIONS,
    "domain/models/declarative.py": DECLARATIONS,
    "domain/models/files.py": DECLARATIONS,
    "domain/models/folders.py": DECLARATIONS,
    "domain/models/annotations.py": DECLARATIONS,
    "domain/models/guards.py": DECLARATIONS,
    "domain/models/ownership.py": DECLARATIONS,
    # Its state sums, in SQL: the processingState filter's tests (tests/unit/domain/test_links.py).
    "domain/models/pipeline.py": "tests/unit/domain/test_links.py",
    "domain/models/portability.py": DECLARATIONS,
    "domain/models/search.py": DECLARATIONS,
    "domain/models/tags.py": DECLARATIONS,
    # Its savepoints: the changes feed's and the vocabulary's tests (test_vocabulary.py too).
    "domain/pending.py": "tests/unit/domain/test_changes.py",
    "domain/portability/exports/runs.py": "tests/unit/workers/test_exports.py",
    "domain/portability/exports/jobs.py": "tests/unit/workers/test_exports.py",
    "domain/portability/restore/captures.py": "tests/unit/handlers/cli/test_restore.py",
    "domain/portability/restore/checks.py": "tests/unit/handlers/cli/test_restore.py",
    "domain/portability/restore/cards.py": "tests/unit/handlers/cli/test_restore.py",
    "domain/pipeline/capture.py": "tests/unit/workers/stages/test_capture.py",
    "domain/pipeline/errors.py": "tests/unit/workers/test_pipeline.py",
    "domain/pipeline/link_metadata.py": "tests/unit/workers/stages/test_link_metadata.py",
    "domain/pipeline/link_preview.py": "tests/unit/workers/stages/test_link_preview.py",
    "domain/pipeline/media.py": "tests/unit/workers/stages/test_media.py",
    "domain/pipeline/processing.py": "tests/unit/workers/stages/test_link_metadata.py",
    "domain/pipeline/renditions.py": "tests/unit/workers/stages/test_renditions.py",
    "domain/pipeline/results.py": "tests/unit/workers/stages/test_link_preview.py",
    "domain/pipeline/rules.py": "tests/unit/workers/test_pipeline.py",
    "domain/pipeline/status.py": "tests/unit/handlers/test_card_json.py",
    "domain/pipeline/transcript.py": "tests/unit/workers/stages/test_transcript.py",
    "domain/tags/rows.py": "tests/unit/domain/cards/test_editing.py",
    "handlers/http/auth.py": "tests/unit/handlers/http/test_errors.py",
    "handlers/web/oauth_server.py": "tests/unit/handlers/web/test_authorize.py",
    "handlers/web/oauth_resources.py": "tests/unit/handlers/web/test_agents.py",
    "handlers/web/pages.py": "tests/unit/handlers/web/test_sign_in.py",
    "handlers/web/routes.py": "tests/unit/handlers/web/test_sign_in.py",
    "workers/broker.py": "tests/unit/workers/test_pipeline.py",
    "workers/idempotency.py": "tests/unit/handlers/http/test_operations_idempotency.py",
    "workers/main.py": "tests/unit/test_cli.py",
    "workers/oauth.py": "tests/unit/handlers/web/test_sign_in.py",
    "workers/stages/pictures.py": "tests/unit/workers/stages/test_link_preview.py",
}


def _is_namespace(init: Path) -> bool:
    """Whether a package's __init__.py holds nothing but its docstring."""
    return all(
        isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        for node in ast.parse(init.read_text(), str(init)).body
    )


def _modules() -> list[str]:
    """What needs a test: every module of src/ but the migrations and namespace packages, and the spec."""
    found = [SPEC]
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        if relative.parts[:3] == ("domain", "migrations", "versions"):
            continue
        if path.name == "__init__.py" and _is_namespace(path):
            continue
        found.append(relative.as_posix())
    return found


def _unit_tests() -> list[Path]:
    tests = [p.relative_to(UNIT) for p in sorted(UNIT.rglob("test_*.py"))]
    return [t for t in tests if t.as_posix() not in WHOLE_REPOSITORY_TESTS]


def _names(test: Path, module: str) -> bool:
    """Whether the test file (relative to tests/unit) is named after the module (relative to src/)."""
    folder, _, file = module.rpartition("/")
    name = "init" if file == "__init__.py" else file.rsplit(".", 1)[0]
    stem = test.stem.removeprefix("test_")
    return test.parent.as_posix() == (folder or ".") and (stem == name or stem.startswith(f"{name}_"))


def test_every_unit_test_file_names_a_module_at_its_mirrored_path() -> None:
    wrong = []
    for test in _unit_tests():
        if test.parts[0] == "openapi":
            names = ["cardvault"] if test.parent.as_posix() == "openapi" else []
        else:
            folder = SRC / test.parent
            names = ["init"] if (folder / "__init__.py").exists() else []
            names += [p.stem for p in folder.glob("*.py") if p.name != "__init__.py"]
            names += (
                [p.name for p in folder.iterdir() if (p / "__init__.py").exists()] if folder.is_dir() else []
            )
        stem = test.stem.removeprefix("test_")
        if not any(stem == name or stem.startswith(f"{name}_") for name in names):
            wrong.append(f"tests/unit/{test.as_posix()}")
    assert wrong == [], "name a module or package of src/ at its mirrored path (docs/architecture.md)"


def test_every_module_has_a_test_file_or_says_which_test_exercises_it() -> None:
    tests = _unit_tests()
    modules = _modules()
    untested = [m for m in modules if m not in COVERED_ELSEWHERE and not any(_names(t, m) for t in tests)]
    assert untested == [], "add tests/unit/<path>/test_<module>.py, or an entry in COVERED_ELSEWHERE"
    stale = [m for m in COVERED_ELSEWHERE if m not in modules or any(_names(t, m) for t in tests)]
    assert stale == [], "these modules are gone or have a test file of their own: drop their entries"
    missing = [t for t in COVERED_ELSEWHERE.values() if t.startswith("tests/") and not (ROOT / t).is_file()]
    assert missing == []
