"""How a setting is declared: once, on the field it fills, with its variable's name, its type,
its default, its unit and what it does. One reader fills every declared field of a settings
class from the environment, and docs/configuration.md's table is written from the same
declarations (cardvault.settings.document).

A field's declaration is kept in its dataclass metadata: ``setting`` for a field one variable
sets (with its default), ``required`` for one the dataclass has no default for (a default the
environment's other values decide, or none), ``table`` for a dict whose keys are each set by a
variable of their own, and ``group`` for a nested settings class. Rules that tie two settings
together (a default made from another setting, two that go together) are in the settings
class's own ``from_env``, after ``read``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

SETTING, TABLE, GROUP = "cardvault.setting", "cardvault.settings-table", "cardvault.settings-group"


class SettingsError(ValueError):
    """An environment variable holds a value the service cannot use."""


@dataclasses.dataclass(frozen=True)
class Kind(Generic[T_co]):
    """A setting's type: what the table calls it, and how a value that is set is read."""

    label: str  # the table's type column
    parse: Callable[[str, str], T_co]  # (the variable's name, its value) -> the setting's value
    blank_is_unset: bool = False  # a value of spaces alone counts as unset (not only "")


@dataclasses.dataclass(frozen=True)
class Setting(Generic[T_co]):
    """One environment variable."""

    name: str
    kind: Kind[T_co]
    default: T_co | None  # the value while the variable is unset or empty
    description: str
    unit: str = ""
    shown: str | None = None  # the table's default column, when the default is not a plain value
    also: str | None = None  # another tool's variable read when this one is unset

    def raw(self, env: Mapping[str, str]) -> str | None:
        """The variable's value, or None while it is unset (or empty)."""
        value = env.get(self.name) or (env.get(self.also) if self.also else None) or None
        if value is not None and self.kind.blank_is_unset and not value.strip():
            return None
        return value

    def read(self, env: Mapping[str, str]) -> T_co | None:
        return self.value(self.raw(env))

    def value(self, raw: str | None) -> T_co | None:
        """The setting's value for the variable's value (None: unset)."""
        return self.default if raw is None else self.kind.parse(self.name, raw)


@dataclasses.dataclass(frozen=True)
class Group:
    """A nested settings class, with a title for its part of the table."""

    of: type[Any]
    title: str
    read: Callable[[Mapping[str, str]], Any]  # its from_env


@dataclasses.dataclass(frozen=True)
class Table:
    """A dict field whose keys are each set by a variable of their own."""

    title: str
    settings: Mapping[str, Setting[Any]]


def setting(
    name: str,
    kind: Kind[T],
    default: T,
    description: str,
    *,
    unit: str = "",
    shown: str | None = None,
    also: str | None = None,
    secret: bool = False,
) -> T:
    """A dataclass field set by the variable ``name``, ``default`` while it is unset (a secret is
    left out of the dataclass's repr)."""
    declared = Setting(name, kind, default, description, unit=unit, shown=shown, also=also)
    return dataclasses.field(default=default, repr=not secret, metadata={SETTING: declared})


def required(
    name: str,
    kind: Kind[Any],
    default: Any,
    description: str,
    *,
    unit: str = "",
    shown: str | None = None,
) -> Mapping[str, Any]:
    """The metadata of a dataclass field with no default of its own (``dataclasses.field(
    metadata=required(...))``): what ``from_env`` reads while the variable is unset is
    ``default``, or what the class's own rules make of it (``shown`` says which)."""
    return {SETTING: Setting(name, kind, default, description, unit=unit, shown=shown)}


def table(title: str, settings: Mapping[str, Setting[T]]) -> dict[str, T]:
    """A dict field with a key for each of ``settings``, their defaults by default."""
    defaults = {key: declared.default for key, declared in settings.items()}
    return cast(
        "dict[str, T]",
        dataclasses.field(default_factory=lambda: dict(defaults), metadata={TABLE: Table(title, settings)}),
    )


def group(of: type[Any], default: T, title: str, read: Callable[[Mapping[str, str]], T]) -> T:
    """A field holding the nested settings class ``of``, which ``read`` builds from the environment."""
    return dataclasses.field(default=default, metadata={GROUP: Group(of, title, read)})


def read(cls: type[Any], env: Mapping[str, str]) -> tuple[dict[str, Any], set[str]]:
    """Every declared field of a settings class read from the environment, and the fields whose
    variable is unset; a bad value raises SettingsError naming its variable."""
    values: dict[str, Any] = {}
    unset: set[str] = set()
    for field in dataclasses.fields(cls):
        if (declared := field.metadata.get(SETTING)) is not None:
            raw = declared.raw(env)
            values[field.name] = declared.value(raw)
            if raw is None:
                unset.add(field.name)
        elif (keyed := field.metadata.get(TABLE)) is not None:
            values[field.name] = {key: each.read(env) for key, each in keyed.settings.items()}
        elif (nested := field.metadata.get(GROUP)) is not None:
            values[field.name] = nested.read(env)
    return values, unset


def field_setting(cls: type[Any], name: str) -> Setting[Any]:
    """The declaration of one field of a settings class."""
    declared = next(f for f in dataclasses.fields(cls) if f.name == name).metadata[SETTING]
    return cast("Setting[Any]", declared)


def sections(cls: type[Any], title: str) -> Iterator[tuple[str, list[Setting[Any]]]]:
    """Every setting of a settings class, in the order declared, as (title, settings) parts:
    the class's own first, then each table and nested class's."""
    own: list[Setting[Any]] = []
    parts: list[tuple[str, list[Setting[Any]]]] = []
    for field in dataclasses.fields(cls):
        if (declared := field.metadata.get(SETTING)) is not None:
            own.append(declared)
        elif (keyed := field.metadata.get(TABLE)) is not None:
            parts.append((keyed.title, list(keyed.settings.values())))
        elif (nested := field.metadata.get(GROUP)) is not None:
            parts.extend(sections(nested.of, nested.title))
    yield title, own
    yield from parts
