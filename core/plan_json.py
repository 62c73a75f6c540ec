"""Reading a plan's JSON (pure): the bytes as terraform or a shell wrote them, into one object, or the
error that refuses them; the values it marks sensitive; digests of its values that are safe to publish.
Shared by classifying changes (core/plan.py) and walking the configuration (core/plan_code.py)."""

from __future__ import annotations

import codecs
import hashlib
import json
from typing import Any, Protocol

import orjson

# Stands for every value a plan marks sensitive before it is digested. Digests appear in PR comments:
# with the value itself inside, anyone could test guesses of a secret against them.
SENSITIVE = "(sensitive value hidden by plangate)"


class Values(Protocol):
    """What is read of a raw `change` object: a dict, or core.plan_lean's LeanChange (decoded on `get`)."""

    def get(self, key: str, default: Any = None, /) -> Any: ...


class PlanError(ValueError):
    """The bytes are not a plan this code can trust (encoding, JSON, version or shape)."""


def load_document(data: bytes | str) -> dict[str, Any]:
    """The JSON object in `data`, decoded as terraform or a shell's redirect wrote it; PlanError if none."""
    return _load(_decode(data))


def _decode(data: bytes | str) -> str:
    """UTF-8 (BOM or not) or UTF-16 as PowerShell's `>` writes it (with BOM, or recognisably without)."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    if data.startswith(codecs.BOM_UTF8):
        codec = "utf-8-sig"
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        codec = "utf-16"
    elif len(data) >= 2 and data[0] != 0 and data[1] == 0:
        codec = "utf-16-le"
    elif len(data) >= 2 and data[0] == 0 and data[1] != 0:
        codec = "utf-16-be"
    else:
        codec = "utf-8"
    try:
        return data.decode(codec)
    except UnicodeDecodeError as e:
        raise PlanError(f"plan is not valid {codec} text: {e.reason} at byte {e.start}") from e


def _reject_constant(name: str) -> Any:
    raise PlanError(f"plan is not valid JSON: {name} is not a JSON value")


# Digits to "1", every other byte to "0": 19 digits in a row may be an integer beyond 64 bits, which
# orjson reads as a (rounded) float. Found by a substring search, faster than a regex's.
_DIGITS = bytes(0x31 if 0x30 <= b <= 0x39 else 0x30 for b in range(256))
_LONG_NUMBER = b"1" * 19


def _load(text: str) -> dict[str, Any]:
    """The document's one JSON object (see `value_of` for how it is read)."""
    if not text.strip():
        raise PlanError("plan is empty: expected `terraform show -json` output")
    doc = value_of(text)
    if not isinstance(doc, dict):
        raise PlanError(f"plan must be a JSON object, not {type(doc).__name__}")
    return doc


def value_of(data: str | memoryview) -> Any:
    """One JSON value, a whole document or a slice of one (valid UTF-8): orjson reads a large plan several
    times faster; the standard library reads, or explains, what orjson refuses (lone surrogates, deep
    nesting, any error) and every value with a number it would round (an integer beyond 64 bits), so each
    value is read exactly as the standard library reads it, whether it is read alone or with its document."""
    encoded = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data.tobytes()
    if _LONG_NUMBER in encoded.translate(_DIGITS):
        return _load_stdlib(data if isinstance(data, str) else encoded.decode("utf-8"))
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return _load_stdlib(data if isinstance(data, str) else encoded.decode("utf-8"))


def _load_stdlib(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise PlanError(f"plan is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    except RecursionError as e:
        raise PlanError("plan is not valid JSON: nested too deeply") from e


def digest(value: Any) -> str:
    """32 hex of SHA-256 over canonical JSON (sorted keys, no whitespace, UTF-8): equal values, equal
    digests, whatever order terraform wrote the keys in. orjson writes it many times faster (there is a
    digest per change of a plan); the standard library writes what orjson refuses (an integer
    beyond 64 bits, a lone surrogate), so a given value always takes the same path."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
            "utf-8", "surrogatepass"
        )
    return hashlib.sha256(text).hexdigest()[:32]


def masked(value: Any, marks: Any) -> Any:
    """`value` with everything `marks` (a `*_sensitive` mirror of its shape) calls sensitive replaced by
    SENSITIVE; a `true` mark covers everything beneath it, whatever its shape."""
    if marks is True:
        return SENSITIVE
    if not marks:  # false, null, {} or []: nothing beneath is sensitive, the value is kept as it is
        return value
    if isinstance(marks, dict) and isinstance(value, dict):
        return {key: masked(sub, marks.get(key)) for key, sub in value.items()}
    if isinstance(marks, list) and isinstance(value, list):
        return [masked(sub, marks[i] if i < len(marks) else None) for i, sub in enumerate(value)]
    return value


def change_digest(provider: Any, rtype: Any, actions: tuple[str, ...], change: Values, values: Values) -> str:
    """32 hex naming what a create, update or read does: its actions and both sides as terraform wrote
    them, which values are unknown until apply, and which are sensitive, masked like an object's (their
    digests are published): the reviewer never sees a secret, so a change of it alone is the same change.
    `values`: what core.plan decoded of `change` already (each value of a lean change is decoded once)."""
    known = {key: values.get(key) for key in ("before", "after", "before_sensitive", "after_sensitive")}
    for key in ("after", "after_sensitive"):
        known[key] = known[key] if known[key] is not None else change.get(key)
    sides = {side: masked(known[side], known[f"{side}_sensitive"]) for side in ("before", "after")}
    facts = {"provider_name": provider, "type": rtype, "actions": list(actions), **sides}
    return digest({**facts, "after_unknown": change.get("after_unknown")})


def sensitive_of(change: Values) -> tuple[str, ...]:
    """Every plain value either side of a change marks sensitive, to be masked wherever it is shown."""
    found: dict[str, None] = {}
    for side in ("before", "after"):
        _collect(change.get(side), change.get(f"{side}_sensitive"), found)
    return tuple(found)


def _collect(value: Any, marks: Any, found: dict[str, None]) -> None:
    """Walk value alongside its sensitivity marks; a `true` mark covers everything beneath it."""
    if marks is True:
        _leaves(value, found)
    elif isinstance(marks, dict) and isinstance(value, dict):
        for key, sub in marks.items():
            _collect(value.get(key), sub, found)
    elif isinstance(marks, list) and isinstance(value, list):
        for sub_value, sub_marks in zip(value, marks, strict=False):
            _collect(sub_value, sub_marks, found)


def _leaves(value: Any, found: dict[str, None]) -> None:
    """Plain text of each leaf as a renderer would show it; booleans and nulls reveal nothing worth masking."""
    if isinstance(value, dict):
        for sub in value.values():
            _leaves(sub, found)
    elif isinstance(value, list):
        for sub in value:
            _leaves(sub, found)
    elif isinstance(value, str) and value:
        found[value] = None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        found[str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)] = None


def any_marked(marks: Any) -> bool:
    """Does a `*_sensitive` mirror mark anything at all?"""
    if marks is True:
        return True
    if isinstance(marks, dict):
        return any(any_marked(m) for m in marks.values())
    if isinstance(marks, list):
        return any(any_marked(m) for m in marks)
    return False
