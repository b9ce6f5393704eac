"""Request validation with field-by-field details, for the validators plugged into Connexion
(cardvault.handlers.http.connexion_overrides).

Connexion's own validators report only the first problem, as jsonschema's long message (which
can echo a whole 512 KiB field back), and turn a non-UTF-8 body into a 500. These report every
problem briefly, and take the error code a schema declares with ``x-error-code``."""

from __future__ import annotations

import functools
import heapq
import itertools
import json
import re
import typing as t
from functools import lru_cache

import anyio.to_thread
from jsonschema import Draft4Validator, ValidationError, validators
from starlette.datastructures import QueryParams

from cardvault.handlers.http.errors import InvalidRequest

_MAX_FIELDS = 20
_MAX_ERRORS = 100  # schema errors collected per request; the first _MAX_FIELDS are reported
MAX_DEPTH = 32  # JSON nesting levels a body may have
INLINE_BODY_BYTES = 16 * 1024  # larger bodies are parsed and validated off the event loop


@lru_cache(maxsize=256)
def _ecma_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a schema pattern so that ``$`` means the end of the string, as in ECMA-262 and
    JSON Schema, not "before a final newline" as in Python."""
    return re.compile(re.sub(r"(?<!\\)\$$", r"\\Z", pattern))


def _over_size_bound(schema: t.Any, instance: t.Any) -> bool:
    """Say whether the instance already breaks the schema's maxLength or maxItems; that error
    is reported, and the costlier keywords below are not run on an oversized value, so no
    value costs more than its bound allows."""
    if isinstance(instance, str):
        return len(instance) > int(schema.get("maxLength", len(instance)))
    if isinstance(instance, list):
        return len(instance) > int(schema.get("maxItems", len(instance)))
    return False


def _pattern(validator: t.Any, pattern: str, instance: t.Any, schema: t.Any) -> t.Iterator[ValidationError]:
    checked = isinstance(instance, str) and not _over_size_bound(schema, instance)
    if checked and not _ecma_pattern(pattern).search(instance):
        yield ValidationError(f"does not match {pattern!r}")


@functools.cache
def _strict(base: t.Any) -> t.Any:
    """The validator class ``base`` with bounded pattern and items checks, made once per base:
    Connexion makes a body validator per request, and a new class (jsonschema's are attrs
    classes, compiled from source) cost 15% of a create's CPU."""
    check_items = base.VALIDATORS["items"]

    def items(validator: t.Any, items: t.Any, instance: t.Any, schema: t.Any) -> t.Iterator[ValidationError]:
        if not _over_size_bound(schema, instance):
            yield from check_items(validator, items, instance, schema)

    # The spec uses no uniqueItems (tests/unit/openapi/test_cardvault.py says why), so
    # jsonschema's quadratic check of it never runs.
    # types-jsonschema leaves extend() unannotated.
    return validators.extend(base, {"pattern": _pattern, "items": items})  # type: ignore[no-untyped-call]


StrictDraft4Validator = _strict(Draft4Validator)


def _describe(error: ValidationError) -> str:
    """A short message for one failed rule, never echoing the value."""
    rule, bound = error.validator, t.cast(t.Any, error.validator_value)
    if rule == "oneOf" and error.context:
        # The spec's only oneOf is a nullable reference, `oneOf: [Type, NullValue]` (a test in
        # tests/unit/openapi/test_cardvault.py keeps it so): what the type asks for, or null.
        first = [e for e in error.context if e.relative_schema_path and e.relative_schema_path[0] == 0]
        return _describe((first or list(error.context))[0]) + ", or null"
    if rule == "enum":
        return "must be one of: " + ", ".join(json.dumps(v) for v in bound)
    messages = {
        "type": f"must be of type {bound}",
        "maxLength": f"must be at most {bound} characters",
        "minLength": f"must be at least {bound} characters",
        "pattern": "does not have the required form",
        "maximum": f"must be at most {bound}",
        "minimum": f"must be at least {bound}",
        "maxItems": f"must have at most {bound} items",
        "minItems": f"must have at least {bound} items",
        "required": "is required",
        "additionalProperties": "is not a field of this object",
        "format": f"must be a valid {bound}",
    }
    return messages.get(str(rule), error.message[:200])


def _pointer(path: t.Iterable[t.Any]) -> str:
    return "/".join(str(part) for part in path)


def field_errors(
    errors: t.Iterable[ValidationError], location: str, prefix: str = ""
) -> list[dict[str, str]]:
    """Flatten jsonschema errors into {location, field, message} entries."""
    fields = []
    for error in errors:
        path = list(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
            # Only the first few are reported: pick them without sorting 100,000 names.
            unknown = heapq.nsmallest(_MAX_FIELDS, (name for name in error.instance if name not in known))
            for name in unknown:
                fields.append(
                    {
                        "location": location,
                        "field": _pointer([*path, name]) or prefix,
                        "message": _describe(error),
                    }
                )
            continue
        if error.validator == "required":
            missing = str(error.message).split("'")[1] if "'" in error.message else ""
            path.append(missing)
        field = "/".join(part for part in (prefix, _pointer(path)) if part)  # "include/0", "tags/1"
        fields.append({"location": location, "field": field, "message": _describe(error)})
    return fields[:_MAX_FIELDS]


def _error_codes(errors: list[ValidationError]) -> set[str | None]:
    return {error.schema.get("x-error-code") for error in errors if isinstance(error.schema, dict)}


def _raise_invalid_tag(errors: list[ValidationError], fields: list[dict[str, str]]) -> t.NoReturn:
    bad = next((e.instance for e in errors if isinstance(e.instance, str)), "")
    raise InvalidRequest(
        f"Tag {bad[:80]!r} is invalid: a tag is 1 to 64 characters after trimming, without "
        "control characters, visible at both ends.",
        code="INVALID_TAG",
        details={"tag": bad, "fields": fields},
    )


def _raise_for(errors: list[ValidationError], location: str, prefix: str = "") -> None:
    fields = field_errors(errors, location, prefix)
    if _error_codes(errors) == {"INVALID_TAG"}:
        _raise_invalid_tag(errors, fields)
    summary = "; ".join(f"{f['field'] or location} {f['message']}" for f in fields[:3])
    raise InvalidRequest(f"The request {location} is invalid: {summary}.", details={"fields": fields})


def _is_utf8_encodable(value: str) -> bool:
    if value.isascii():  # a flag of the string: no scan
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _check_structure(raw: bytes, body: t.Any) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH or holding an unpaired surrogate escape, without
    recursion, walking the body only when its text says it might (no schema of ours goes
    beyond a few levels, and surrogates can only come from \\uD800-\\uDFFF escapes)."""
    might_be_deep = raw.count(b"[") + raw.count(b"{") > MAX_DEPTH
    might_have_surrogates = _SURROGATE_ESCAPE.search(raw) is not None
    if not (might_be_deep or might_have_surrogates):
        return
    stack = [(body, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InvalidRequest(f"The request body is nested deeper than {MAX_DEPTH} levels.")
        if isinstance(value, str):
            if might_have_surrogates and not _is_utf8_encodable(value):
                raise InvalidRequest("The request body holds an unpaired UTF-16 surrogate escape.")
        elif isinstance(value, dict):
            if might_have_surrogates:
                stack.extend((key, depth) for key in value)
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)


def _object(pairs: list[tuple[str, t.Any]]) -> dict[str, t.Any]:
    """A JSON object whose names are unique: with a repeated name, which value counts would
    depend on the parser (RFC 8259 §4), so the body is refused."""
    found = dict(pairs)
    if len(found) != len(pairs):
        raise InvalidRequest("The request body repeats a name in an object.")
    return found


def _reject_constant(name: str) -> t.NoReturn:
    raise ValueError(f"{name} is not JSON")


def body_validator(base: t.Any, schema: dict[str, t.Any]) -> t.Any:
    """The validator of a body schema: ``base`` (Connexion's class) with bounded checks."""
    return _strict(base)(schema, format_checker=Draft4Validator.FORMAT_CHECKER)


async def check_body(raw: bytes, validator: t.Any) -> t.Any:
    """Parse and validate a JSON body, off the event loop when it is large; return it, or
    None when it is empty."""
    if len(raw) > INLINE_BODY_BYTES:
        return await anyio.to_thread.run_sync(_check, raw, validator)
    return _check(raw, validator)


def _check(raw: bytes, validator: t.Any) -> t.Any:
    if not raw:
        return None
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant, object_pairs_hook=_object)
    except UnicodeDecodeError:
        raise InvalidRequest("The request body is not valid UTF-8.") from None
    except RecursionError:
        raise InvalidRequest(f"The request body is nested deeper than {MAX_DEPTH} levels.") from None
    except ValueError as exc:
        raise InvalidRequest(f"The request body is not valid JSON: {exc}.") from None
    _check_structure(raw, body)
    errors = list(itertools.islice(validator.iter_errors(body), _MAX_ERRORS))
    if errors:
        _raise_for(errors, "body")
    return body


# How a query value of each type must be written: the JSON forms, in ASCII (Python's int() and
# float() would also take "1_0", " 5", "+5" and non-ASCII digits).
_QUERY_FORMS = {
    "integer": (re.compile(r"-?(?:0|[1-9][0-9]*)"), "must be an integer written in ASCII digits"),
    "number": (
        re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"),
        "must be a number written in ASCII digits",
    ),
    "boolean": (re.compile(r"true|false"), "must be true or false"),
}


def _query_form_errors(params: list[dict[str, t.Any]], query_string: bytes) -> list[dict[str, str]]:
    """Problems with how the query is written: a parameter given more than once (only a list
    may repeat), or a number or boolean not in its JSON form."""
    raw = QueryParams(query_string.decode("latin-1"))
    errors = []
    for param in params:
        name, kind = param["name"], param.get("schema", {}).get("type")
        values = raw.getlist(name)
        if len(values) > 1 and kind != "array":
            errors.append({"location": "query", "field": name, "message": "must be given at most once"})
        elif values and kind in _QUERY_FORMS and not _QUERY_FORMS[kind][0].fullmatch(values[0]):
            errors.append({"location": "query", "field": name, "message": _QUERY_FORMS[kind][1]})
    return errors


_CHECKERS: dict[int, tuple[t.Any, t.Any]] = {}


def _checker(schema: dict[str, t.Any]) -> t.Any:
    """The validator of a parameter schema, built once: Connexion makes a parameter validator
    per request, and building the schema validators took a tenth of a GET's CPU. The schemas
    are the app's, alive as long as it is; the entry keeps its schema, so its id stays unique."""
    entry = _CHECKERS.get(id(schema))
    if entry is None:
        entry = _CHECKERS[id(schema)] = (
            schema,
            StrictDraft4Validator(schema, format_checker=Draft4Validator.FORMAT_CHECKER),
        )
    return entry[1]


def raise_unknown_query_parameters(extra: t.Iterable[str]) -> t.NoReturn:
    """Refuse query parameters the operation does not declare (strict validation)."""
    fields = [
        {"location": "query", "field": name, "message": "is not a parameter of this operation"}
        for name in sorted(extra)
    ]
    raise InvalidRequest(
        "Unknown query parameter: " + ", ".join(sorted(extra)) + ".",
        details={"fields": fields},
    )


def check_parameters(parameters: dict[str, t.Any], request: t.Any) -> None:
    """Check the query, path and header parameters of a request, listing every problem."""
    query = parameters.get("query", [])
    errors = _query_form_errors(query, request.scope.get("query_string", b""))
    malformed = {error["field"] for error in errors}
    schema_errors: list[ValidationError] = []
    sources = {
        "query": request.query_params,
        "path": request.path_params,
        "header": request.headers,
    }
    for location, values in sources.items():
        for param in parameters.get(location, []):
            name = param["name"]
            if location == "query" and name in malformed:
                continue
            value = values.get(name if location != "path" else name.replace("-", "_"))
            if value is None:
                if param.get("required"):
                    errors.append({"location": location, "field": name, "message": "is required"})
                continue
            problems = list(_checker(param.get("schema", {})).iter_errors(value))
            schema_errors.extend(problems)
            errors.extend(field_errors(problems, location, prefix=name))
    if schema_errors and len(errors) == len(schema_errors) and _error_codes(schema_errors) == {"INVALID_TAG"}:
        _raise_invalid_tag(schema_errors, errors)  # a bad `tag` filter, like a bad tag in a body
    if errors:
        summary = "; ".join(f"{f['field']} {f['message']}" for f in errors[:3])
        raise InvalidRequest(
            f"The request parameters are invalid: {summary}.", details={"fields": errors[:_MAX_FIELDS]}
        )
