"""docs/configuration.md's table is the settings' declarations."""

from pathlib import Path

import pytest

from cardvault.settings import document

DOCUMENT = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"


def test_the_configuration_documents_table_is_written_from_the_declarations() -> None:
    text = DOCUMENT.read_text()
    assert document.with_table(text) == text, f"the table is stale: run {document.COMMAND}"
    assert document.COMMAND in text.split(document.BEGIN)[0]  # the page says how it is made


def test_every_setting_has_a_row() -> None:
    table = document.table()
    assert all(f"| `{s.name}` |" in table for s in document.every_setting())


def test_check_fails_on_a_stale_table_and_write_mends_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "configuration.md"
    page.write_text(
        f"# Configuration\n\nProse.\n\n{document.BEGIN}\n| old |\n{document.END}\n\nMore prose.\n"
    )
    assert document.main(["--check", str(page)]) == 1
    assert document.COMMAND in capsys.readouterr().err
    assert document.main(["--write", str(page)]) == 0
    assert document.main(["--check", str(page)]) == 0
    text = page.read_text()
    assert text.startswith("# Configuration\n\nProse.\n\n") and text.endswith("\n\nMore prose.\n")
    assert "| old |" not in text and "| `CARDVAULT_DATA_DIR` |" in text


def test_a_page_without_the_markers_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no settings table"):
        document.with_table("# Configuration\n")
