"""A generated library for the cost of ranking ``q`` (bench/bench_relevance.py): text cards
whose titles and bodies are drawn from a vocabulary with a Zipf-like distribution (English
stop words among them at about their share of written text), and three kinds of queries drawn
from the cards, each remembering the card it was drawn from:

- keyword queries: one to three words of a card's title, as a person recalls a title;
- questions of 8 to 12 words: three to five of a card's words among stop words, and one or two
  words of the vocabulary the card need not hold (people add words of their own);
- typo queries: a word of a card (5 letters or more) with one edit past its first letter (two
  from 9 letters: an insertion, deletion, substitution or transposition) that the vocabulary
  does not hold, alone or beside another word of the card.

Deterministic: the same seed and sizes give the same cards and queries."""

from __future__ import annotations

import dataclasses
import random
import string

from harness.scale_data import Zipf

VOCABULARY = 20_000
ZIPF_S = 1.05
STOP_SHARE = 0.35  # of a body's words are stop words
_STOP_WORDS = (
    "the of and to a in is it that for on with as was at by this be from or are an not have but "
    "how what why where which when do does i my you can should there"
)
STOP_WORDS = _STOP_WORDS.split()
QUESTION_LEADS = (
    ("how", "do", "i"),
    ("what", "is", "the"),
    ("why", "does", "my"),
    ("where", "can", "i", "find"),
    ("which", "of", "the"),
    ("is", "there", "a"),
    ("how", "should", "i"),
)
_ONSETS = [*"bdfgklmnprstvz", "br", "st", "tr"]
_VOWELS = [*"aeiou", "ai"]
_CODAS = ["", "", "", "", "n", "r", "s"]


@dataclasses.dataclass(frozen=True)
class GeneratedCard:
    title: str
    body: str

    @property
    def content(self) -> str:
        """A text card's content: its title is the first line."""
        return f"{self.title}\n{self.body}"


@dataclasses.dataclass(frozen=True)
class GeneratedQuery:
    q: str
    card: int  # the index of the card it was drawn from


@dataclasses.dataclass(frozen=True)
class RelevanceCorpus:
    cards: list[GeneratedCard]
    keywords: list[GeneratedQuery]
    questions: list[GeneratedQuery]
    typos: list[GeneratedQuery]
    vocabulary: frozenset[str]


def _vocabulary(rng: random.Random, count: int) -> list[str]:
    """Distinct pronounceable words of 2 to 5 syllables (most of 4 to 9 letters), in rank order."""
    seen: dict[str, None] = {}
    while len(seen) < count:
        syllables = rng.choices([2, 3, 4, 5], weights=[5, 5, 3, 1])[0]
        word = "".join(
            rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS) for _ in range(syllables)
        )
        if word not in STOP_WORDS:
            seen[word] = None
    return list(seen)


def _typo(rng: random.Random, word: str) -> str:
    """The word with one edit (two from 9 letters, three letters apart or more), never on its
    first letter; the later edit is made first, so each stays where it was drawn."""
    count = 2 if len(word) >= 9 else 1
    while True:
        places = sorted(rng.sample(range(1, len(word) - 1), count), reverse=True)
        if count == 1 or places[0] - places[1] >= 3:
            break
    for at in places:
        kind = rng.choice(["insert", "delete", "substitute", "transpose"])
        letter = rng.choice([c for c in string.ascii_lowercase if c != word[at]])
        if kind == "insert":
            word = word[:at] + letter + word[at:]
        elif kind == "delete":
            word = word[:at] + word[at + 1 :]
        elif kind == "transpose" and word[at] != word[at + 1]:
            word = word[:at] + word[at + 1] + word[at] + word[at + 2 :]
        else:
            word = word[:at] + letter + word[at + 1 :]
    return word


def generate(seed: int = 43, cards: int = 10_000, queries: int = 100) -> RelevanceCorpus:
    """``cards`` cards and ``queries`` queries of each kind, the same for the same arguments."""
    rng = random.Random(seed)  # noqa: S311 -- repeatable test data, not secrets
    words = _vocabulary(rng, VOCABULARY)
    content = Zipf(words, ZIPF_S, rng)
    stop = Zipf(STOP_WORDS, 1.0, rng)
    made = []
    for _ in range(cards):
        title = " ".join(content.draw() for _ in range(rng.randint(3, 8)))
        body = " ".join(
            stop.draw() if rng.random() < STOP_SHARE else content.draw() for _ in range(rng.randint(20, 150))
        )
        made.append(GeneratedCard(title.capitalize(), body))
    vocabulary = frozenset(words)

    def card_words(index: int) -> list[str]:
        card = made[index]
        return [w for w in f"{card.title.lower()} {card.body}".split() if w in vocabulary]

    keywords, questions, typos = [], [], []
    for _ in range(queries):
        index = rng.randrange(cards)
        title = made[index].title.lower().split()
        keywords.append(
            GeneratedQuery(" ".join(rng.sample(title, rng.randint(1, min(3, len(title))))), index)
        )
    for _ in range(queries):
        index = rng.randrange(cards)
        held = list(dict.fromkeys(card_words(index)))  # distinct, in the order of the card
        picked = rng.sample(held, min(len(held), rng.randint(3, 5))) + [
            content.draw() for _ in range(rng.randint(1, 2))
        ]
        text = list(rng.choice(QUESTION_LEADS))
        length = rng.randint(8, 12)
        while picked:
            text.append(picked.pop(0))
            if len(text) + len(picked) < length:
                text.append(stop.draw())
        while len(text) < length:
            text.append(stop.draw())
        questions.append(GeneratedQuery(" ".join(text[:12]), index))
    while len(typos) < queries:
        index = rng.randrange(cards)
        long_words = [w for w in card_words(index) if len(w) >= 5]
        if not long_words:
            continue
        wrong = _typo(rng, rng.choice(long_words))
        if wrong in vocabulary:
            continue
        other = [rng.choice(card_words(index))] if rng.random() < 0.5 else []
        typos.append(GeneratedQuery(" ".join([wrong, *other]), index))
    return RelevanceCorpus(made, keywords, questions, typos, vocabulary)
