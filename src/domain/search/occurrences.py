"""Where a query's texts occur in a run of folded words, found in one pass whatever their number
and length: every word but the last of each text is a letter of an automaton (Aho-Corasick over
words), and each word read costs one step of it, so a phrase of sixteen words is no dearer than
one word. The comparisons made are counted, and reading stops when its allowance is spent."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from cardvault.domain.search.query import Text
from cardvault.domain.search.words import MAX_WORD_LENGTH


class Allowance:
    """Comparisons left to make; ``spent`` counts those made (what a budget is charged)."""

    def __init__(self, comparisons: int) -> None:
        self.given = self.left = comparisons

    @property
    def spent(self) -> int:
        return self.given - self.left


class Finder:
    """The texts to find (duplicates dropped, the first kept: on a tie the earlier text wins),
    compiled once for every field of a page."""

    def __init__(self, texts: Sequence[Text]) -> None:
        self.texts = list(dict.fromkeys(texts))
        self._letters: dict[str, int] = {}  # the words before each text's last
        self._last: dict[str, int] = {}  # a last word, exact: the texts (bits) it ends
        self._last_prefix: dict[str, int] = {}  # a last word that begins words: the texts it ends
        heads: list[tuple[int, ...]] = []
        for bit, text in enumerate(self.texts):
            head = text.words[:-1]
            heads.append(tuple(self._letters.setdefault(word, len(self._letters)) for word in head))
            last = self._last_prefix if text.prefix else self._last
            last[text.words[-1]] = last.get(text.words[-1], 0) | 1 << bit
        self._lengths = sorted({len(word) for word in self._last_prefix})
        # Every beginning of those last words: a word that leaves them stops being compared.
        self._stems = {word[:n] for word in self._last_prefix for n in self._lengths if n <= len(word)}
        self._step, self._ended = _automaton(heads, len(self._letters))

    def length(self, bit: int) -> int:
        """How many words the text of that bit spans."""
        return len(self.texts[bit].words)

    def _classify(self, word: str) -> tuple[int, int, int]:
        """The word as a letter (-1: in no text's head), the texts whose last word it is, and the
        comparisons that took: one lookup, and one per length of a last word that begins it."""
        word = word[:MAX_WORD_LENGTH]
        ends = self._last.get(word, 0)
        probes = 0
        for length in self._lengths:
            probes += 1
            if length > len(word) or word[:length] not in self._stems:
                break
            ends |= self._last_prefix.get(word[:length], 0)
        return self._letters.get(word, -1), ends, 1 + probes

    def reader(self) -> Reader:
        return Reader(self)


class Reader:
    """One field's pass: feed its words in order, learn which text (its bit) starts where."""

    def __init__(self, finder: Finder) -> None:
        self._finder = finder
        self._known: dict[str, tuple[int, int]] = {}  # a field repeats its words: each classified once
        self._state = 0
        self._read = 0
        self.starts: dict[int, int] = {}  # a word's position: the bit of the first text starting there

    def feed(self, word: str, allowance: Allowance) -> None:
        finder = self._finder
        known = self._known.get(word)
        if known is None:
            letter, ends, cost = finder._classify(word)
            known = self._known[word] = (letter, ends)
            allowance.left -= cost
        else:
            allowance.left -= 1
        letter, ends = known
        found = finder._ended[self._state] & ends
        while found:
            bit = (found & -found).bit_length() - 1
            found &= found - 1
            start = self._read - finder.length(bit) + 1
            self.starts[start] = min(bit, self.starts.get(start, bit))
            allowance.left -= 1
        self._state = finder._step[self._state].get(letter, 0)
        self._read += 1


def _automaton(heads: list[tuple[int, ...]], letters: int) -> tuple[list[dict[int, int]], list[int]]:
    """Each state's step on each letter (a letter it lacks goes back to the start) and the texts
    (bits) whose head is a suffix of what the state has read."""
    step: list[dict[int, int]] = [{}]
    ended = [0]
    for bit, head in enumerate(heads):
        state = 0
        for letter in head:
            if letter not in step[state]:
                step.append({})
                ended.append(0)
                step[state][letter] = len(step) - 1
            state = step[state][letter]
        ended[state] |= 1 << bit
    fallback = [0] * len(step)
    children = dict(step[0])
    for letter in range(letters):
        step[0].setdefault(letter, 0)
    waiting = deque(children.values())
    while waiting:  # breadth first: a state's fallback is settled before its children's
        state = waiting.popleft()
        ended[state] |= ended[fallback[state]]
        for letter in range(letters):
            child = step[state].get(letter)
            if child is None:
                step[state][letter] = step[fallback[state]][letter]
            else:
                fallback[child] = step[fallback[state]][letter]
                waiting.append(child)
    for state in range(len(step)):  # the start's own steps back to it need no entry
        step[state] = {letter: to for letter, to in step[state].items() if to}
    return step, ended
