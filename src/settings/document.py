"""docs/configuration.md's table of settings, written from their declarations.

    python -m cardvault.settings.document --write docs/configuration.md   rewrite the table
    python -m cardvault.settings.document --check docs/configuration.md   exit 1 if it is stale
    python -m cardvault.settings.document                                 print the table

The table stands between the BEGIN and END comments below; the file's other text is its own
(tests/unit/settings/test_document.py fails while the table differs from the declarations)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cardvault.settings.declaring import Setting, sections
from cardvault.settings.service import Settings

COMMAND = "python -m cardvault.settings.document --write docs/configuration.md"
BEGIN = f"<!-- settings table: generated from cardvault.settings by `{COMMAND}`; do not edit it here -->"
END = "<!-- end of the settings table -->"
TITLE = "The service"  # the heading of Settings' own variables (the nested classes' have theirs)


def every_setting() -> list[Setting[Any]]:
    """Every declared setting, in the table's order."""
    return [declared for _, part in sections(Settings, TITLE) for declared in part]


def table() -> str:
    """The generated part of docs/configuration.md, its markers included."""
    lines = [BEGIN]
    for title, part in sections(Settings, TITLE):
        lines += [
            "",
            f"### {title}",
            "",
            "| variable | type | default | unit | meaning |",
            "|---|---|---|---|---|",
        ]
        lines += [_row(declared) for declared in part]
    return "\n".join([*lines, "", END])


def _row(declared: Setting[Any]) -> str:
    default = declared.shown or display(declared.default, declared.unit)
    cells = [f"`{declared.name}`", declared.kind.label, default, declared.unit, declared.description]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def display(value: object, unit: str = "") -> str:
    """How the table shows a default: ``unset`` for None, the rest as it is written in the variable."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, tuple):
        return "`" + ",".join(_written(part) for part in value) + "`"
    if isinstance(value, int | float):
        return f"`{_written(value)}`" + _binary_size(value, unit)
    return f"`{value}`"


def _written(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _binary_size(value: float, unit: str) -> str:
    """`` (25 MiB)`` after a default in bytes that is a whole number of GiB or MiB."""
    for size, name in ((1024**3, "GiB"), (1024**2, "MiB")):
        if unit == "bytes" and value >= size and value % size == 0:
            return f" ({int(value // size)} {name})"
    return ""


def with_table(text: str) -> str:
    """A document's text with the table between its markers written anew."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the document has no settings table: put {BEGIN!r} and {END!r} in it")
    return text[:start] + table() + text[end + len(END) :]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cardvault.settings.document", description=__doc__)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", type=Path, metavar="FILE", help="rewrite the table in FILE")
    action.add_argument("--check", type=Path, metavar="FILE", help="exit 1 if the table in FILE is stale")
    args = parser.parse_args(argv)
    if args.write is None and args.check is None:
        print(table())
        return 0
    path: Path = args.write or args.check
    text = path.read_text()
    if args.write is not None:
        path.write_text(with_table(text))
        return 0
    if with_table(text) != text:
        print(f"{path}: the settings table differs from the declarations; run {COMMAND}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
