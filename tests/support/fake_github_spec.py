"""GitHub's OpenAPI description as a router and a request validator for tests/support/fake_github.py.

Routing and validation both come from `tests/fixtures/github/github-bot-openapi.json` (GitHub's own description,
trimmed to the operations the bot needs; SOURCE.json says where it came from). Request bodies and parameters are
validated by `openapi-schema-validator` (jsonschema with the OpenAPI 3.0 dialect), never by hand-written checks, so
a request the real API would refuse with 422 is refused here too. A few server-side limits that GitHub enforces but
does not write into its schemas (comment bodies, status descriptions; see ../shared/github/limits.json) are added as
schema overlays and validated the same way."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from jsonschema.exceptions import ValidationError
from openapi_schema_validator import OAS30Validator, OAS30WriteValidator, oas30_format_checker

SPEC_PATH = Path(__file__).resolve().parents[1] / "fixtures" / "github" / "github-bot-openapi.json"
METHODS = ("get", "post", "patch", "put", "delete")

# Operations the bot calls that the trimmed description does not hold. GET /user tells the token's own login
# (real GitHub answers 403 "Resource not accessible by integration" to an installation token such as GITHUB_TOKEN).
EXTRA_OPERATIONS = {("get", "/user"): "users/get-authenticated"}

# Limits GitHub enforces with a 422 but leaves out of the schema; each is validated as `allOf` with the body schema.
_COMMENT_BODY = {"properties": {"body": {"type": "string", "maxLength": 65536}}}
OVERLAYS: dict[str, dict[str, Any]] = {
    "issues/create-comment": _COMMENT_BODY,
    "issues/update-comment": _COMMENT_BODY,
    "pulls/create": _COMMENT_BODY,
    "pulls/update": _COMMENT_BODY,
    "repos/create-commit-status": {"properties": {"description": {"type": "string", "maxLength": 140}}},
    "checks/create": {
        "properties": {"output": {"properties": {"title": {"type": "string", "maxLength": 255}}}}
    },
}

# Bodies GitHub documents in prose but the trimmed schema leaves out; validated as `anyOf` with the body schema.
# add-labels: "You can also pass an `array` of labels directly" (its description); PyGithub's add_to_labels does.
ALTERNATIVES: dict[str, dict[str, Any]] = {
    "issues/add-labels": {"type": "array", "minItems": 1, "items": {"type": "string"}},
}

# A trailing {ref}, {path}, {branch} or {basehead} may hold slashes (`heads/feature/x`, `kb/metrics/gmv.yaml`,
# `main...sqlcanary/repair/pr-1`).
_GREEDY_PARAMS = {"ref", "path", "branch", "basehead"}


def _pointer(*parts: str) -> str:
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    operation_id: str
    regex: re.Pattern[str]
    literal_chars: int

    def match(self, path: str) -> dict[str, str] | None:
        found = self.regex.fullmatch(path)
        return found.groupdict() if found else None


def _compile(method: str, template: str, operation_id: str) -> Route:
    names = re.findall(r"\{(\w+)\}", template)
    pattern = ""
    for piece in re.split(r"(\{\w+\})", template):
        if piece.startswith("{"):
            name = piece[1:-1]
            greedy = name in _GREEDY_PARAMS and template.endswith(piece)
            pattern += f"(?P<{name}>{'.+' if greedy else '[^/]+'})"
        else:
            pattern += re.escape(piece)
    literal = len(re.sub(r"\{\w+\}", "", template))
    assert len(set(names)) == len(names), template
    return Route(method, template, operation_id, re.compile(pattern), literal)


class OpenApiSpec:
    """The description, its routes, and validators built lazily per operation."""

    def __init__(self, path: Path = SPEC_PATH) -> None:
        self.document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        self._validators: dict[tuple[str, ...], Any] = {}

    @cached_property
    def routes(self) -> list[Route]:
        found = []
        for template, item in self.document["paths"].items():
            for method in METHODS:
                if method in item:
                    found.append(_compile(method, template, item[method]["operationId"]))
        found += [_compile(m, t, op) for (m, t), op in EXTRA_OPERATIONS.items()]
        return sorted(found, key=lambda r: -r.literal_chars)

    @cached_property
    def operation_ids(self) -> frozenset[str]:
        return frozenset(r.operation_id for r in self.routes)

    def route(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        """The operation serving `method path` (the most literal template wins), with its raw path parameters."""
        for candidate in self.routes:
            if candidate.method == method.lower():
                params = candidate.match(path)
                if params is not None:
                    return candidate, params
        return None

    def operation(self, route: Route) -> dict[str, Any]:
        return self.document["paths"].get(route.template, {}).get(route.method, {})

    def _validator(
        self,
        key: tuple[str, ...],
        pointer: str,
        *,
        write: bool,
        overlay: dict[str, Any] | None = None,
        alternative: dict[str, Any] | None = None,
    ) -> Any:
        if key not in self._validators:
            root: dict[str, Any] = {"$ref": pointer}
            if overlay is not None:
                root = {"allOf": [root, overlay]}
            if alternative is not None:
                root = {"anyOf": [root, alternative]}
            # `$ref`s inside GitHub's schemas point at #/components/...: give the root the document's sections.
            root |= {"components": self.document["components"], "paths": self.document["paths"]}
            cls = OAS30WriteValidator if write else OAS30Validator
            self._validators[key] = cls(root, format_checker=oas30_format_checker)
        return self._validators[key]

    def _parameters(self, route: Route) -> list[tuple[str, dict[str, Any], str]]:
        """(name, parameter object, JSON pointer to its schema) for every declared parameter."""
        found = []
        for index, param in enumerate(self.operation(route).get("parameters", [])):
            pointer = _pointer("paths", route.template, route.method, "parameters", str(index))
            if "$ref" in param:
                pointer = param["$ref"]
                param = self.document["components"]["parameters"][pointer.rsplit("/", 1)[1]]
            found.append((param["name"], param, pointer + "/schema"))
        return found

    def validate(
        self, route: Route, *, path_params: dict[str, str], query: dict[str, str], body: Any
    ) -> list[str]:
        """Every problem with the request, as GitHub-style messages; an empty list when it is valid."""
        problems: list[str] = []
        for name, param, pointer in self._parameters(route):
            where = param["in"]
            source = path_params if where == "path" else query if where == "query" else None
            if source is None or name not in source:
                if param.get("required") and source is not None:
                    problems.append(f"{where} parameter {name!r} is required")
                continue
            value = _coerce(source[name], param.get("schema", {}))
            validator = self._validator((route.operation_id, "param", name), pointer, write=False)
            problems += [f"{where} parameter {name!r}: {e.message}" for e in validator.iter_errors(value)]
        request_body = self.operation(route).get("requestBody")
        if request_body is None:
            return problems
        if body is None:
            if request_body.get("required"):
                problems.append("a JSON request body is required")
            return problems
        pointer = _pointer(
            "paths", route.template, route.method, "requestBody", "content", "application/json", "schema"
        )
        op = route.operation_id
        validator = self._validator(
            (op, "body"), pointer, write=True, overlay=OVERLAYS.get(op), alternative=ALTERNATIVES.get(op)
        )
        return problems + [_describe(e) for e in validator.iter_errors(body)]


def _coerce(raw: str, schema: dict[str, Any]) -> Any:
    """Query and path values arrive as strings; turn them into what the schema's type expects."""
    kind = schema.get("type")
    try:
        if kind == "integer":
            return int(raw)
        if kind == "number":
            return float(raw)
    except ValueError:
        return raw
    if kind == "boolean" and raw in ("true", "false"):
        return raw == "true"
    return raw


def _describe(error: ValidationError) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "(body)"
    if len(error.message) <= 200:
        return f"{where}: {error.message}"
    # The message starts with the repr of a large instance (51 annotations): name the rule instead.
    rule = error.validator_value if isinstance(error.validator_value, int | str | bool) else "…"
    return f"{where}: does not satisfy {error.validator} {rule}"
