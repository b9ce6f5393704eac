"""The MCP tools, made from the spec: each ``/v1`` operation marked ``x-mcp`` is one tool, named by
its operationId, described by its summary and description, taking its parameters and request
body as arguments (``inputSchema``) and answering its success response (``outputSchema``). The
schemas are the spec's own, with every ``$ref`` resolved and OpenAPI 3.0's ``nullable`` written
as JSON Schema, so a tool can never disagree with its operation (tests/unit/handlers/http/
test_mcp_tools.py checks each against the spec).

``x-mcp`` is a mapping, ``{}`` for the rule alone: a GET is read-only; GET, PUT and DELETE are
idempotent and DELETE destructive; ``destructive: true`` or ``idempotent: true|false`` says
otherwise. A destructive tool takes ``confirm: true`` or does nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

BASE_PATH = "/v1"
_METHODS = ("get", "put", "post", "delete", "patch")
# Header parameters a tool takes, by their argument's name. The conditional ones (If-Match,
# If-None-Match) are left out: a tool answers the current state, and a 304 is no answer.
_HEADER_ARGUMENTS = {"Idempotency-Key": "idempotencyKey"}
BODY = "body"
CONFIRM = "confirm"
# OpenAPI 3.0 keywords that are not JSON Schema's (or say nothing to a tool's caller).
_DROPPED = frozenset({"nullable", "example", "examples", "discriminator", "xml", "externalDocs"})


class SpecError(Exception):
    """An operation marked for MCP cannot be made a tool."""


@dataclasses.dataclass(frozen=True)
class Argument:
    """One argument of a tool and where its value goes in the HTTP request."""

    name: str
    location: str  # path | query | header | body
    wire_name: str


@dataclasses.dataclass(frozen=True)
class Tool:
    """An operation as a tool."""

    name: str
    title: str
    description: str
    method: str
    path: str  # the template, with BASE_PATH
    arguments: tuple[Argument, ...]
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    read_only: bool
    destructive: bool
    idempotent: bool
    scopes: tuple[str, ...]

    @property
    def writes(self) -> bool:
        return not self.read_only


def json_schema(schema: Any, components: Mapping[str, Any], seen: tuple[str, ...] = ()) -> Any:
    """An OpenAPI 3.0 schema as a self-contained JSON Schema (2020-12): $refs inlined (a
    recursive one becomes ``{}``), ``nullable`` as a ``null`` type, boolean exclusive bounds as
    numbers, OpenAPI's own keywords and extensions dropped."""
    if isinstance(schema, list):
        return [json_schema(item, components, seen) for item in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if name in seen:
            return {}
        return json_schema(components["schemas"][name], components, (*seen, name))
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED or key.startswith("x-"):
            continue
        if key in ("properties", "patternProperties"):
            out[key] = {name: json_schema(sub, components, seen) for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "not", "allOf", "anyOf", "oneOf"):
            out[key] = json_schema(value, components, seen)
        else:
            out[key] = value
    for bound in ("Minimum", "Maximum"):
        if out.get(f"exclusive{bound}") is True:
            out[f"exclusive{bound}"] = out.pop(bound.lower())
        elif out.get(f"exclusive{bound}") is False:
            del out[f"exclusive{bound}"]
    if schema.get("nullable") is True:
        out = _nullable(out)
    return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
        return schema
    return {"anyOf": [schema, {"type": "null"}]}


def _parameter(parameter: Mapping[str, Any], components: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = parameter.get("$ref")
    return components["parameters"][ref.rsplit("/", 1)[-1]] if isinstance(ref, str) else parameter


def _success(operation: Mapping[str, Any], components: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    status = min(code for code in operation["responses"] if code.startswith("2"))
    response = operation["responses"][status]
    ref = response.get("$ref")
    return status, components["responses"][ref.rsplit("/", 1)[-1]] if isinstance(ref, str) else response


def _tool(path: str, method: str, item: Mapping[str, Any], spec: Mapping[str, Any]) -> Tool:
    operation = item[method]
    marks = operation["x-mcp"] or {}
    components = spec["components"]
    properties: dict[str, Any] = {}
    required: list[str] = []
    arguments: list[Argument] = []
    for raw in [*item.get("parameters", []), *operation.get("parameters", [])]:
        parameter = _parameter(raw, components)
        location, wire = parameter["in"], parameter["name"]
        name = _HEADER_ARGUMENTS.get(wire) if location == "header" else wire
        if name is None:
            continue
        if name in properties:
            raise SpecError(f"{operation['operationId']}: two arguments named {name}")
        described = {"description": parameter["description"]} if parameter.get("description") else {}
        properties[name] = {**json_schema(parameter["schema"], components), **described}
        arguments.append(Argument(name, location, wire))
        if parameter.get("required"):
            required.append(name)
    body = operation.get("requestBody")
    if body is not None:
        properties[BODY] = json_schema(body["content"]["application/json"]["schema"], components)
        if body.get("description"):
            properties[BODY] = {**properties[BODY], "description": body["description"]}
        arguments.append(Argument(BODY, "body", BODY))
        if body.get("required"):
            required.append(BODY)
    read_only = method == "get"
    destructive = bool(marks.get("destructive", method == "delete"))
    if destructive:
        properties[CONFIRM] = {
            "type": "boolean",
            "const": True,
            "description": "Must be true: this tool deletes or ends something for good.",
        }
        required.append(CONFIRM)
    status, success = _success(operation, components)
    content = (success.get("content") or {}).get("application/json")
    output = json_schema(content["schema"], components) if content else None
    if output is not None and output.get("type") != "object":
        raise SpecError(f"{operation['operationId']}: its {status} response is not an object")
    summary = operation.get("summary", "").strip()
    description = "\n\n".join(p for p in (summary, operation.get("description", "").strip()) if p)
    return Tool(
        name=operation["operationId"],
        title=summary.rstrip("."),
        description=description,
        method=method.upper(),
        path=BASE_PATH + path,
        arguments=tuple(arguments),
        input_schema={
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
        output_schema=output,
        read_only=read_only,
        destructive=destructive,
        idempotent=bool(marks.get("idempotent", method in ("get", "put", "delete"))),
        scopes=_scopes(operation, spec),
    )


def _scopes(operation: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[str, ...]:
    security = operation.get("security", spec.get("security", []))
    return next((tuple(r["oauth2"]) for r in security if "oauth2" in r), ())


def tools_from_spec(spec: Mapping[str, Any]) -> dict[str, Tool]:
    """Every operation marked ``x-mcp``, as a tool, by name."""
    tools = {}
    for path, item in spec["paths"].items():
        for method in _METHODS:
            if method in item and "x-mcp" in item[method]:
                tool = _tool(path, method, item, spec)
                tools[tool.name] = tool
    return tools


@dataclasses.dataclass(frozen=True)
class HttpCall:
    """The HTTP request a tool call is."""

    method: str
    path: str
    raw_path: str
    query: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes | None


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def http_call(tool: Tool, arguments: Mapping[str, Any], body: bytes | None) -> HttpCall:
    """The request of a call of ``tool`` with ``arguments`` (``body``: the body argument as
    JSON). What the arguments hold is the operation's to check, as it would be over HTTP; a
    missing path argument leaves its segment empty, which matches no operation (404)."""
    path, raw_path = tool.path, tool.path
    pairs: list[tuple[str, str]] = []
    headers: list[tuple[bytes, bytes]] = []
    for argument in tool.arguments:
        value = arguments.get(argument.name)
        if value is None:
            continue
        if argument.location == "path":
            # Quoted in the path the router reads too, so a value stays one segment ("a/b" is
            # no path of two, ".." climbs nowhere) and meets the parameter's pattern as sent.
            text = quote(_query_value(value), safe="")
            path = path.replace(f"{{{argument.wire_name}}}", text)
            raw_path = raw_path.replace(f"{{{argument.wire_name}}}", text)
        elif argument.location == "query":
            values = value if isinstance(value, list) else [value]
            pairs.extend((argument.wire_name, _query_value(v)) for v in values)
        elif argument.location == "header":
            headers.append((argument.wire_name.lower().encode(), _query_value(value).encode()))
    for argument in tool.arguments:
        if argument.location == "path":
            path = path.replace(f"{{{argument.wire_name}}}", "")
            raw_path = raw_path.replace(f"{{{argument.wire_name}}}", "")
    return HttpCall(
        method=tool.method,
        path=path,
        raw_path=raw_path,
        query=urlencode(pairs).encode(),
        headers=headers,
        body=body,
    )
