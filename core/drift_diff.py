"""Which attributes of one resource changed, before → after, as text safe to publish (pure).

Terraform's `resource_drift` gives each drifted resource's object as the state recorded it (`before`) and
as the refresh read it (`after`), with `*_sensitive` mirrors saying which parts are secret and, in a
planned change, `after_unknown` saying which parts are known only after apply. A person fixing drift
needs the leaves that differ, not two whole objects: so each changed leaf is one `AttributeChange`,
named by its path (`tags.env`, `rule[0].port`, `labels["a.b"]`).

Never a secret: a leaf (or any part of a subtree) marked sensitive on either side is shown as
terraform shows it, `(sensitive value)`, on both sides, and a sensitive subtree is one entry whose
inner paths are not walked (their names could be secret map keys). A value known only after apply is
`(known after apply)`. A value longer than `VALUE_LIMIT` characters is cut, with an ellipsis.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

SENSITIVE = "(sensitive value)"
UNKNOWN = "(known after apply)"
ABSENT = "(absent)"  # a map key or list element one side does not have
VALUE_LIMIT = 120  # characters of one shown value; longer ones are cut and end with "…"
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MISSING = object()


@dataclass(frozen=True)
class AttributeChange:
    """One changed leaf: its path and both values as text (masked for sensitivity, cut to length)."""

    path: str
    before: str
    after: str


def attribute_changes(change: Any) -> tuple[AttributeChange, ...]:
    """Every changed leaf of a `change` object (a dict, or anything with its `get`), in document order."""
    out: list[AttributeChange] = []
    _walk(
        change.get("before"),
        change.get("after"),
        change.get("before_sensitive"),
        change.get("after_sensitive"),
        change.get("after_unknown"),
        "",
        out,
    )
    return tuple(out)


def _sub(marks: Any, key: str | int) -> Any:
    """The marks beneath `key`; a `true` mark covers everything beneath it."""
    if marks is True:
        return True
    if isinstance(marks, dict) and isinstance(key, str):
        return marks.get(key)
    if isinstance(marks, list) and isinstance(key, int) and key < len(marks):
        return marks[key]
    return None


def _marked(marks: Any) -> bool:
    """Anything at or beneath this point is marked."""
    if marks is True:
        return True
    if isinstance(marks, dict):
        return any(_marked(m) for m in marks.values())
    if isinstance(marks, list):
        return any(_marked(m) for m in marks)
    return False


def _walk(
    before: Any, after: Any, b_marks: Any, a_marks: Any, unknown: Any, path: str, out: list[AttributeChange]
) -> None:
    if b_marks is True or a_marks is True:
        _secret(before, after, unknown, path, out)
        return
    if unknown is True:  # the whole value shown: hidden when any part of it is secret
        shown = SENSITIVE if _marked(b_marks) else _text(before)
        out.append(AttributeChange(path or "(whole object)", shown, UNKNOWN))
        return
    if isinstance(before, dict) and isinstance(after, dict) and (before or after):
        keys = list(dict.fromkeys([*before, *after]))
        for key in keys:
            _walk(
                before.get(key, _MISSING),
                after.get(key, _MISSING),
                _sub(b_marks, key),
                _sub(a_marks, key),
                _sub(unknown, key),
                _join(path, key),
                out,
            )
        return
    if isinstance(before, list) and isinstance(after, list) and (before or after):
        for i in range(max(len(before), len(after))):
            _walk(
                before[i] if i < len(before) else _MISSING,
                after[i] if i < len(after) else _MISSING,
                _sub(b_marks, i),
                _sub(a_marks, i),
                _sub(unknown, i),
                f"{path}[{i}]",
                out,
            )
        return
    if _marked(b_marks) or _marked(a_marks):  # marks beneath a value that has no parts to walk: hide it all
        _secret(before, after, unknown, path, out)
    elif not _same(before, after):
        out.append(AttributeChange(path or "(whole object)", _text(before), _text(after)))


def _secret(before: Any, after: Any, unknown: Any, path: str, out: list[AttributeChange]) -> None:
    if before is _MISSING or after is _MISSING or before != after or _marked(unknown):
        out.append(AttributeChange(path or "(whole object)", SENSITIVE, SENSITIVE))


def _same(before: Any, after: Any) -> bool:
    """Equal as terraform means it: 1 and 1.0 are; true and 1 are not (Python's `==` would say they are),
    and neither are an absent key and a null value."""
    if before is _MISSING or after is _MISSING:
        return before is after
    if isinstance(before, bool) or isinstance(after, bool):
        return type(before) is type(after) and before == after
    return bool(before == after)


def _join(path: str, key: str) -> str:
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _text(value: Any) -> str:
    """A value as one line of JSON (terraform's own notation for strings, numbers, lists and maps), cut."""
    if value is _MISSING:
        return ABSENT
    try:
        shown = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), sort_keys=False)
    except (TypeError, ValueError):
        shown = repr(value)
    return shown if len(shown) <= VALUE_LIMIT else shown[: VALUE_LIMIT - 1] + "…"
