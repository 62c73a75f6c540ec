"""GitHub's request-body validation and its `422 Invalid request.` answer.

GitHub checks a body against the operation's JSON schema before anything else and lists every problem in the
wording of its validator (brandur/json_schema, quoted in tests/fixtures/github/LIMITS.md): "Only 65535
characters are allowed; 70292 were supplied.", "\"head_sha\" wasn't supplied.", and for a wrong type
"For 'properties/name', nil is not a string.". This covers the schema keywords the stand-in's operations use.
"""

from __future__ import annotations

import json
import re
from typing import Any

from starlette.responses import JSONResponse

Schema = dict[str, Any]

_TYPES: dict[str, type] = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}
DATE_TIME = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-2][0-9]:[0-5][0-9]:[0-5][0-9](Z|[\-+][0-9]{2}:[0-5][0-9])$")


def _inspect(value: Any) -> str:
    """Ruby's `inspect`, which the messages use for values."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_inspect(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_inspect(k)} => {_inspect(v)}" for k, v in value.items()) + "}"
    return str(value)


def _to_s(value: Any) -> str:
    """Ruby's `to_s`, which the enum message uses."""
    if value is None:
        return ""
    return value if isinstance(value, str) else _inspect(value)


def _is(value: Any, kind: str) -> bool:
    return isinstance(value, _TYPES[kind]) and (kind == "boolean" or not isinstance(value, bool))


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def problems(schema: Schema, data: Any, key: str = "") -> list[str]:
    """Every problem with `data`, in the validator's order: anyOf, enum, type, then items, properties, strings."""
    found: list[str] = []
    if "anyOf" in schema and all(problems(option, data, key) for option in schema["anyOf"]):
        found.append('No subschema in "anyOf" matched.')
    if "enum" in schema and data not in schema["enum"]:
        found.append(f"{_to_s(data)} is not a member of {_inspect(schema['enum'])}.")
    kind = schema.get("type")
    if kind is not None and not _is(data, kind):
        article = "an" if kind[0] in "aeiou" else "a"
        found.append(f"For 'properties/{key}', {_inspect(data)} is not {article} {kind}.")
    if isinstance(data, list):
        for item in data:
            found += problems(schema.get("items", {}), item, key)
        limit = schema.get("maxItems")
        if limit is not None and len(data) > limit:
            allowed = "item is" if limit == 1 else "items are"
            found.append(f"No more than {limit} {allowed} allowed; {_count(len(data), 'was', 'were')} supplied.")
    if isinstance(data, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in data:
                found += problems(sub, data[name], name)
        missing = sorted(set(schema.get("required", [])) - set(data))
        if missing:
            names = '", "'.join(missing)
            found.append(f'"{names}" {"wasn" if len(missing) == 1 else "weren"}\'t supplied.')
    if isinstance(data, str):
        if schema.get("format") == "date-time" and not DATE_TIME.match(data):
            found.append(f"{data} is not a valid date-time.")
        limit = schema.get("maxLength")
        if limit is not None and len(data) > limit:
            allowed = "character is" if limit == 1 else "characters are"
            found.append(f"Only {limit} {allowed} allowed; {_count(len(data), 'was', 'were')} supplied.")
    return found


def invalid_request(found: list[str], docs: str) -> JSONResponse:
    return JSONResponse(
        {"message": "Invalid request.\n\n" + "\n".join(found), "documentation_url": docs, "status": "422"}, 422
    )
