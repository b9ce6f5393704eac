"""Realistic card data for the scale bench, written straight into the project's schema.

Cards of eight types with Zipf-distributed words, user tags and AI tags, folders, favorites,
archive and Trash flags in the proportions below, one search row per card made by
``cardvault.domain.search.index`` itself. PostgreSQL is loaded with COPY, SQLite with batched
inserts. Deterministic: the same seed gives the same data."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

from cardvault.domain.names import tag_key
from cardvault.domain.search.index import tag_words, word_runs

TYPES = [
    ("link", 45),
    ("text", 25),
    ("image", 8),
    ("quote", 7),
    ("video", 5),
    ("document", 4),
    ("audio", 3),
    ("palette", 3),
]
FAVORITE, ARCHIVED, TRASHED = 0.04, 0.03, 0.01
NOTED = 0.1  # of cards carry a note (the headline relevance ranks first, with the tags)
FOLDERS_PER_ACCOUNT = 60
IN_FOLDER = 0.15  # of cards are in one folder (a tenth of those in a second one)
START_MS = 1_600_000_000_000  # cards are spread over five years from here
SPAN_MS = 5 * 365 * 86_400_000
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]


def _words(rng: random.Random, count: int) -> list[str]:
    seen: dict[str, None] = {}
    while len(seen) < count:
        seen["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))] = None
    return list(seen)


class Zipf:
    """Draw from a list with probability falling as 1 / rank ** s."""

    def __init__(self, items: list[str], s: float, rng: random.Random) -> None:
        self.items, self.rng = items, rng
        self.cumulative = list(itertools.accumulate(1 / (r + 1) ** s for r in range(len(items))))

    def draw(self) -> str:
        point = self.rng.random() * self.cumulative[-1]
        return self.items[bisect.bisect_left(self.cumulative, point)]


@dataclasses.dataclass
class Stats:
    """What was generated for the big account: how many cards carry each word, tag, folder."""

    words: Counter[str] = dataclasses.field(default_factory=Counter)
    tags: Counter[str] = dataclasses.field(default_factory=Counter)
    folders: Counter[str] = dataclasses.field(default_factory=Counter)


class Generator:
    """Cards, tags, folders and search rows for accounts, with global running pks."""

    def __init__(self, seed: int = 7) -> None:
        self.rng = random.Random(seed)  # noqa: S311 -- repeatable test data, not secrets
        vocabulary = _words(self.rng, 30_000)
        self.words = Zipf(vocabulary, 1.0, self.rng)
        self.user_tags = Zipf([f"{w}" for w in _words(self.rng, 600)], 1.1, self.rng)
        self.ai_tags = Zipf(
            [f"{w} {v}" for w, v in zip(_words(self.rng, 300), vocabulary[:300], strict=True)], 1.0, self.rng
        )
        self.types = [t for t, weight in TYPES for _ in range(weight)]
        self.next_pk = 1
        self.next_id = itertools.count(1)

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self.next_id):026d}"

    def folders(self, account_id: str) -> list[dict[str, Any]]:
        return [
            {
                "id": self._id("fld"),
                "account_id": account_id,
                "name": f"Folder {i}",
                "name_key": f"folder {i}",
                "color": None,
                "kind": "manual",
                "created_at": START_MS,
                "updated_at": START_MS,
            }
            for i in range(FOLDERS_PER_ACCOUNT)
        ]

    def cards(
        self, account_id: str, count: int, folders: list[str], stats: Stats | None = None
    ) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]], list[str], list[str]]]:
        """Yield (card row, tag rows, folder ids, search words) for `count` cards, oldest first."""
        rng = self.rng
        step = SPAN_MS // max(count, 1)
        folder_fill: Counter[str] = Counter()
        for n in range(count):
            pk, self.next_pk = self.next_pk, self.next_pk + 1
            kind = rng.choice(self.types)
            text = " ".join(self.words.draw() for _ in range(rng.randint(6, 40)))
            notes = (
                " ".join(self.words.draw() for _ in range(rng.randint(3, 12)))
                if rng.random() < NOTED
                else None
            )
            url = None
            if kind == "link":
                url = f"https://{self.words.draw()}.example/{self.words.draw()}-{self.words.draw()}"
                text = url
            at = START_MS + n * step + rng.randrange(step)
            card = {
                "pk": pk,
                "id": self._id("crd"),
                "account_id": account_id,
                "type": kind,
                "content": text,
                "notes": notes,
                "url": url,
                "source": None,
                "file_name": None,
                "file_size": None,
                "mime_type": None,
                "metadata_title": None,
                "metadata_description": None,
                "ai_summary": None,
                "ai_transcript": None,
                "is_favorited": rng.random() < FAVORITE,
                "completed_at": None,
                "created_at": at,
                "updated_at": at,
                "deleted_at": at + 1 if rng.random() < TRASHED else None,
                "archived_at": at + 1 if rng.random() < ARCHIVED else None,
            }
            tags = []
            user = list(
                dict.fromkeys(self.user_tags.draw() for _ in range(rng.choice([0, 0, 1, 1, 2, 2, 3])))
            )
            ai = list(dict.fromkeys(self.ai_tags.draw() for _ in range(2 if rng.random() < 0.5 else 0)))
            for tag_kind, names in (("user", user), ("ai", ai)):
                for position, name in enumerate(names):
                    tags.append(
                        {
                            "card_pk": pk,
                            "kind": tag_kind,
                            "name_key": tag_key(name),
                            "name": name,
                            "position": position,
                            "account_id": account_id,
                            "words": tag_words(name),
                        }
                    )
            in_folders: list[str] = []
            if folders and rng.random() < IN_FOLDER:
                in_folders = list(
                    dict.fromkeys(rng.choice(folders) for _ in range(1 if rng.random() < 0.9 else 2))
                )
                in_folders = [f for f in in_folders if folder_fill[f] < 10_000]
                folder_fill.update(in_folders)
            words = list(dict.fromkeys(word for run in word_runs([text, url, notes]) for word in run))
            if stats is not None and card["deleted_at"] is None and card["archived_at"] is None:
                stats.words.update(words)
                stats.tags.update(row["name_key"] for row in tags)
                stats.folders.update(in_folders)
            yield card, tags, in_folders, words
