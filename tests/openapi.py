"""Check an answer against the response schema in GitHub's published REST description (tests/fixtures/github/rest).

Every key sent must have the type GitHub documents (null only where it is nullable), and every required key
must be there, except in the schemas named `lenient`: the stand-in's repositories carry the fields plangate
and its tests read, not all 73 that GitHub sends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REST = Path(__file__).parent / "fixtures" / "github" / "rest"
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def response_schema(operation: str, status: str = "200") -> dict[str, Any]:
    spec = json.loads((REST / f"{operation.replace('/', '__')}.json").read_text())
    schema: dict[str, Any] = spec["responses"][status]["content"]["application/json"]["schema"]
    return schema


def _nullable(schema: dict[str, Any]) -> bool:
    return bool(schema.get("nullable")) or any(
        _nullable(s) for key in ("anyOf", "oneOf", "allOf") for s in schema.get(key, [])
    )


def problems(value: Any, schema: dict[str, Any], lenient: frozenset[str], path: str = "$") -> list[str]:
    """What in `value` disagrees with `schema`; empty when it conforms."""
    if value is None:
        return [] if _nullable(schema) else [f"{path}: null where GitHub never sends null"]
    if "allOf" in schema:
        return [p for part in schema["allOf"] for p in problems(value, part, lenient, path)]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [problems(value, s, lenient, path) for s in schema[key]]
            return [] if any(not o for o in options) else min(options, key=len)
    expected = schema.get("type")
    if expected in _TYPES and (
        not isinstance(value, _TYPES[expected]) or (expected != "boolean" and isinstance(value, bool))
    ):
        return [f"{path}: {type(value).__name__} where GitHub sends {expected}"]
    found: list[str] = []
    if isinstance(value, dict):
        if schema.get("title") not in lenient:
            found += [f"{path}.{key}: missing" for key in schema.get("required", []) if key not in value]
        for key, item in value.items():
            if key in schema.get("properties", {}):
                found += problems(item, schema["properties"][key], lenient, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += problems(item, schema["items"], lenient, f"{path}[{i}]")
    return found
