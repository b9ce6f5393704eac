"""Request validation with field-by-field details, plugged into Connexion's validator map.

Connexion's own validators report only the first problem, as jsonschema's long message (which
can echo a whole 512 KiB field back), and turn a non-UTF-8 body into a 500. These report every
problem briefly, and take the error code a schema declares with ``x-error-code``."""

from __future__ import annotations

import json
import re
import typing as t
from functools import cached_property, lru_cache

from connexion.datastructures import MediaTypeDict
from connexion.validators import VALIDATOR_MAP, JSONRequestBodyValidator, ParameterValidator
from jsonschema import Draft4Validator, ValidationError, validators

from cardvault.handlers.errors import InvalidRequest

_MAX_FIELDS = 20


@lru_cache(maxsize=256)
def _ecma_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a schema pattern so that ``$`` means the end of the string, as in ECMA-262 and
    JSON Schema, not "before a final newline" as in Python."""
    return re.compile(re.sub(r"(?<!\\)\$$", r"\\Z", pattern))


def _pattern(validator: t.Any, pattern: str, instance: t.Any, schema: t.Any) -> t.Iterator[ValidationError]:
    if isinstance(instance, str) and not _ecma_pattern(pattern).search(instance):
        yield ValidationError(f"does not match {pattern!r}")


def _strict(base: t.Any) -> t.Any:
    return validators.extend(base, {"pattern": _pattern})


StrictDraft4Validator = _strict(Draft4Validator)


def _describe(error: ValidationError) -> str:
    """A short message for one failed rule, never echoing the value."""
    rule, bound = error.validator, error.validator_value
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
            known = set(error.schema.get("properties", {}))
            for name in sorted(set(error.instance) - known):
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
        fields.append({"location": location, "field": prefix + _pointer(path), "message": _describe(error)})
    return fields[:_MAX_FIELDS]


def _raise_for(errors: list[ValidationError], location: str, prefix: str = "") -> None:
    codes = {error.schema.get("x-error-code") for error in errors if isinstance(error.schema, dict)}
    fields = field_errors(errors, location, prefix)
    if codes == {"INVALID_TAG"}:
        bad = next((e.instance for e in errors if isinstance(e.instance, str)), "")
        raise InvalidRequest(
            f"Tag {bad[:80]!r} is invalid: a tag is 1 to 64 characters after trimming, "
            "without control characters.",
            code="INVALID_TAG",
            details={"tag": bad, "fields": fields},
        )
    summary = "; ".join(f"{f['field'] or location} {f['message']}" for f in fields[:3])
    raise InvalidRequest(f"The request {location} is invalid: {summary}.", details={"fields": fields})


def _has_lone_surrogate(value: t.Any) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _reject_constant(name: str) -> t.NoReturn:
    raise ValueError(f"{name} is not JSON")


class JSONBodyValidator(JSONRequestBodyValidator):
    """JSON bodies: strict UTF-8, strict JSON, every schema problem listed."""

    @cached_property
    def _validator(self) -> t.Any:  # type: ignore[override]
        base = type(super()._validator)
        return _strict(base)(self._schema, format_checker=Draft4Validator.FORMAT_CHECKER)

    async def _parse(self, stream: t.AsyncGenerator[bytes, None], scope: t.Any) -> t.Any:
        raw = b"".join([chunk async for chunk in stream])
        if not raw:
            return None
        try:
            text = raw.decode("utf-8")
            body = json.loads(text, parse_constant=_reject_constant)
        except UnicodeDecodeError:
            raise InvalidRequest("The request body is not valid UTF-8.") from None
        except RecursionError:
            raise InvalidRequest("The request body is nested too deeply.") from None
        except ValueError as exc:
            raise InvalidRequest(f"The request body is not valid JSON: {exc}.") from None
        if _has_lone_surrogate(body):
            raise InvalidRequest("The request body holds an unpaired UTF-16 surrogate escape.")
        return body

    def _validate(self, body: t.Any) -> dict[str, t.Any] | None:
        if body is None and not self._nullable:
            raise InvalidRequest("The request body must not be empty: send a JSON object.")
        errors = list(self._validator.iter_errors(body))
        if errors:
            _raise_for(errors, "body")
        return None


class FieldParameterValidator(ParameterValidator):
    """Query, path and header parameters, every problem listed."""

    def validate_request(self, request: t.Any) -> None:
        if self.strict_validation:
            extra = self.validate_query_parameter_list(request, security_params=self.security_query_params)
            if extra:
                fields = [
                    {"location": "query", "field": name, "message": "is not a parameter of this operation"}
                    for name in sorted(extra)
                ]
                raise InvalidRequest(
                    "Unknown query parameter: " + ", ".join(sorted(extra)) + ".",
                    details={"fields": fields},
                )
        sources = {
            "query": request.query_params,
            "path": request.path_params,
            "header": request.headers,
        }
        errors: list[dict[str, str]] = []
        for location, values in sources.items():
            for param in self.parameters.get(location, []):
                name = param["name"]
                value = values.get(name if location != "path" else name.replace("-", "_"))
                if value is None:
                    if param.get("required"):
                        errors.append({"location": location, "field": name, "message": "is required"})
                    continue
                problems = StrictDraft4Validator(
                    param.get("schema", {}), format_checker=Draft4Validator.FORMAT_CHECKER
                ).iter_errors(value)
                errors.extend(field_errors(problems, location, prefix=name))
        if errors:
            summary = "; ".join(f"{f['field']} {f['message']}" for f in errors[:3])
            raise InvalidRequest(
                f"The request parameters are invalid: {summary}.", details={"fields": errors}
            )


VALIDATORS = {
    **VALIDATOR_MAP,
    "parameter": FieldParameterValidator,
    "body": MediaTypeDict({**VALIDATOR_MAP["body"], "*/*json": JSONBodyValidator}),
}
