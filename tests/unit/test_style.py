"""House rules that a machine can check: lint, formatting, types, the direction of the layers,
and that the benchmarks stand on their own."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_finds_nothing() -> None:
    result = run(str(BIN / "ruff"), "check", "src", "tests", "bench")
    assert result.returncode == 0, result.stdout + result.stderr


def test_code_is_formatted() -> None:
    result = run(str(BIN / "ruff"), "format", "--check", "src", "tests", "bench")
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


def test_bench_never_imports_the_tests_or_another_benchs_private_names() -> None:
    found = []
    for path in sorted((ROOT / "bench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import):
                found += [f"{where} imports {a.name}" for a in node.names if a.name.split(".")[0] == "tests"]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] == "tests":
                    found.append(f"{where} imports from {node.module}")
                elif node.module.split(".")[0] == "bench":
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    found += [f"{where} imports {node.module}.{name}" for name in private]
    assert found == []
