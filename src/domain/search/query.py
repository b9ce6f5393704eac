"""The search syntax of ``q``, parsed in one pass into what to find, what to leave out and
which qualifiers filter (the grammar is in the spec's description of listCards' ``q``).

    q          = *( space / term / "OR" )
    term       = [ "-" ] ( phrase / qualifier / word )
    phrase     = DQUOTE *( not DQUOTE ) [ DQUOTE ]      an unclosed quote runs to the end
    qualifier  = name ":" ( phrase / value )            name: one of QUALIFIERS, any case
    word       = 1*( not space, not DQUOTE )

A word is split into folded words (cardvault.domain.search.words): one word matches the words
it begins; several (``e-mail``, ``example.com``) match as a phrase whose last word is a prefix.
A phrase matches its folded words side by side, exactly. ``OR`` joins the words or phrases on
either side into one term any of which may match; elsewhere it is ignored. A name that is no
qualifier, or a qualifier with nothing after the colon, is searched as words. A qualifier's
value that cannot be meant (``type:banana``, ``before:yesterday``) raises InvalidQuery with its
position: the client could have sent a valid one."""

from __future__ import annotations

import calendar
import dataclasses
import re
from collections.abc import Iterator
from typing import Literal
from urllib.parse import urlsplit

from cardvault.domain.errors import InvalidQuery
from cardvault.domain.search.words import MAX_WORD_LENGTH, split_words
from cardvault.domain.urls import MAX_HOST, normal_url

MAX_WORDS = 48  # words past the 48th to find, and past the 48th to leave out, are ignored
MAX_QUALIFIERS = 16  # a 17th qualifier is refused (each one is a condition of the statement)
CARD_TYPES = ("text", "link", "image", "video", "audio", "document", "palette", "quote")
STATES = ("favorite", "done", "archived", "failed")  # is:
HAVING = ("file", "notes", "annotations")  # has:
QUALIFIERS = ("tag", "type", "folder", "site", "is", "has", "before", "after")
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*|[0-9a-f:.]+")  # names (IDNA), IPv4, IPv6
MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the latest moment a date names

Name = Literal["tag", "type", "folder", "site", "is", "has", "before", "after"]


@dataclasses.dataclass(frozen=True)
class Text:
    """Words to find side by side (one word: anywhere); with ``prefix`` the last one matches
    every word it begins. ``form`` says where it comes from: ``typed`` in q, or another form of
    a typed word the account's cards hold (``stem``: the same stem; ``typo``: a typo away),
    which search adds (cardvault.domain.search.planning)."""

    words: tuple[str, ...]
    prefix: bool
    form: Literal["typed", "stem", "typo"] = "typed"

    @property
    def phrase(self) -> bool:
        """Whether it is a quoted phrase as typed (found only as written)."""
        return self.form == "typed" and not self.prefix


@dataclasses.dataclass(frozen=True)
class Qualifier:
    """A filter: ``value`` as cleaned (a date as epoch milliseconds, a bound's own meaning
    kept: ``before`` is exclusive, ``after`` inclusive)."""

    name: Name
    value: str | int
    negated: bool = False


@dataclasses.dataclass(frozen=True)
class Query:
    """What ``q`` asks: every group of ``required`` has one of its texts, no text of
    ``excluded`` occurs, and every qualifier holds."""

    required: tuple[tuple[Text, ...], ...] = ()
    excluded: tuple[Text, ...] = ()
    qualifiers: tuple[Qualifier, ...] = ()

    @property
    def has_words(self) -> bool:
        """Whether there is text to find (what relevance orders by)."""
        return bool(self.required)


@dataclasses.dataclass
class _Token:
    kind: Literal["text", "or", "qualifier"]
    position: int
    negated: bool = False
    text: Text | None = None
    qualifier: Qualifier | None = None


def parse(q: str) -> Query:
    """Parse ``q`` in time linear in its length; raise InvalidQuery for a qualifier's value
    that names nothing it could, with its position (in characters, from 0)."""
    required: list[list[Text]] = []
    excluded: list[Text] = []
    qualifiers: list[Qualifier] = []
    counted = {False: 0, True: 0}  # words to find, words to leave out
    after_text = False  # the last term was a text to find (an OR after it may join the next)
    joining = False
    for token in _tokens(q):
        if token.kind == "or":
            joining = after_text
            continue
        joins, after_text, joining = joining, False, False
        if token.qualifier is not None:
            if len(qualifiers) == MAX_QUALIFIERS:
                raise InvalidQuery(f"q holds more than {MAX_QUALIFIERS} qualifiers.", position=token.position)
            qualifiers.append(token.qualifier)
            continue
        assert token.text is not None
        found, before = token.text, counted[token.negated]
        if before + len(found.words) > MAX_WORDS:  # the first words of a phrase still count
            found = Text(found.words[: MAX_WORDS - before], prefix=False)
        counted[token.negated] = before + len(found.words)
        if not found.words:
            continue
        if token.negated:
            excluded.append(found)
        elif joins and required:
            required[-1].append(found)
            after_text = True
        else:
            required.append([found])
            after_text = True
    groups = tuple(dict.fromkeys(tuple(dict.fromkeys(group)) for group in required))
    return Query(groups, tuple(dict.fromkeys(excluded)), tuple(qualifiers))


def _tokens(q: str) -> Iterator[_Token]:
    """The terms of ``q`` in order; texts without a word (``-``, ``"!!"``) are left out."""
    end, i = len(q), 0
    while i < end:
        if q[i].isspace():
            i += 1
            continue
        start = i
        negated = q[i] == "-" and i + 1 < end and not q[i + 1].isspace()
        if negated:
            i += 1
        if q[i] == '"':
            close = q.find('"', i + 1)
            close = end if close < 0 else close
            phrase, i = q[i + 1 : close], close + 1
            words = _words(phrase)
            if words:
                yield _Token("text", start, negated, text=Text(words, prefix=False))
            continue
        run_end = i
        while run_end < end and not q[run_end].isspace() and q[run_end] != '"':
            run_end += 1
        run, i = q[i:run_end], run_end
        if run == "OR" and not negated:
            yield _Token("or", start)
            continue
        name, colon, value = run.partition(":")
        if colon and name.lower() in QUALIFIERS:
            if not value and i < end and q[i] == '"':  # name:"a quoted value"
                close = q.find('"', i + 1)
                close = end if close < 0 else close
                value, i = q[i + 1 : close], close + 1
            if value.strip():
                qualifier = _qualifier(name.lower(), value.strip(), negated, start)
                yield _Token("qualifier", start, negated, qualifier=qualifier)
                continue
        words = _words(run)
        if words:
            yield _Token("text", start, negated, text=Text(words, prefix=True))


def _words(value: str) -> tuple[str, ...]:
    return tuple(word[:MAX_WORD_LENGTH] for word in split_words(value))


def _qualifier(name: str, value: str, negated: bool, position: int) -> Qualifier:
    """The qualifier with its value cleaned, or InvalidQuery at its position."""
    lowered = value.lower()
    if name in ("type", "is", "has"):
        allowed = {"type": CARD_TYPES, "is": STATES, "has": HAVING}[name]
        if lowered not in allowed:
            raise InvalidQuery(
                f"{name}:{value} names nothing: {name}: takes one of {', '.join(allowed)}.",
                position=position,
            )
        return Qualifier(name, lowered, negated)  # type: ignore[arg-type]
    if name in ("before", "after"):
        moment = _moment(value)
        if moment is None:
            raise InvalidQuery(
                f"{name}:{value} is no date: {name}: takes YYYY-MM-DD (UTC) or epoch milliseconds.",
                position=position,
            )
        if negated:  # not before a moment: from it on; not after it: before it
            name, negated = ("after" if name == "before" else "before"), False
        return Qualifier(name, moment, negated)  # type: ignore[arg-type]
    if name == "site":
        host = _host(lowered)
        if host is None:
            raise InvalidQuery(
                f"site:{value} is no host name: site: takes a host such as example.com.", position=position
            )
        return Qualifier("site", host, negated)
    return Qualifier(name, value, negated)  # type: ignore[arg-type]  # tag, folder


def _moment(value: str) -> int | None:
    """Epoch milliseconds of ``YYYY-MM-DD`` (its first moment, UTC) or of a count of them."""
    if value.isascii() and value.isdigit():
        return int(value) if len(value) <= 15 and int(value) <= MAX_MS else None
    found = _DATE.fullmatch(value)
    if found is None:
        return None
    year, month, day = (int(part) for part in found.groups())
    if not (1 <= month <= 12 and 1 <= day <= calendar.monthrange(max(year, 1), month)[1]) or year < 1970:
        return None
    return calendar.timegm((year, month, day, 0, 0, 0)) * 1000


def _host(value: str) -> str | None:
    """The host a ``site:`` names, in the form cards' hosts are kept (cardvault.domain.urls),
    from a host name or a URL."""
    normal = normal_url(value if "://" in value else f"http://{value}")
    if normal is None:
        return None
    host = urlsplit(normal).hostname
    return host if host and len(host) <= MAX_HOST and _HOST.fullmatch(host) else None
