"""Each setting is declared once, and the declarations are what the settings read."""

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

from cardvault.settings import Settings
from cardvault.settings.document import every_setting

SRC = Path(__file__).resolve().parents[3] / "src"


class Watched(Mapping[str, str]):
    """An environment that notes every variable asked for."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values, self.asked = values, set[str]()

    def __getitem__(self, name: str) -> str:
        self.asked.add(name)
        return self.values[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.values)

    def __len__(self) -> int:
        return len(self.values)


def test_every_variable_the_settings_read_is_declared_and_every_declared_one_is_read(tmp_path: Path) -> None:
    env = Watched(
        {
            "CARDVAULT_DATA_DIR": str(tmp_path),
            "CARDVAULT_S3_BUCKET": "files",  # the other S3 settings are read only with a bucket
            "CARDVAULT_AI_BASE_URL": "https://api.example.com/v1",  # the provider's, with a URL
            "CARDVAULT_AI_MODEL": "small-1",
        }
    )
    Settings.from_env(env)
    declared = {s.name for s in every_setting()} | {s.also for s in every_setting() if s.also}
    assert env.asked == declared


def test_each_variable_is_declared_once() -> None:
    counts = Counter(s.name for s in every_setting())
    assert [name for name, count in counts.items() if count > 1] == []
    assert all(s.name.startswith("CARDVAULT_") and s.description for s in every_setting())


def test_every_variable_the_code_names_is_a_declared_setting() -> None:
    declared = {s.name for s in every_setting()}
    named = {
        (path.relative_to(SRC).as_posix(), name)
        for path in SRC.rglob("*.py")
        for name in re.findall(r"\bCARDVAULT_[A-Z0-9_]*[A-Z0-9]\b", path.read_text())
    }
    assert sorted((path, name) for path, name in named if name not in declared) == []


def test_the_broker_url_is_read_alone() -> None:
    assert Settings.redis_url_from_env({"CARDVAULT_REDIS_URL": "redis://r:6379/0"}) == "redis://r:6379/0"
    assert Settings.redis_url_from_env({"CARDVAULT_REDIS_URL": ""}) is None
