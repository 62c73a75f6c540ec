"""Which attributes of one resource change, before → after, as text safe to publish (pure).

Terraform gives each change's object as it is (`before`) and as it will be (`after`), with `*_sensitive`
mirrors saying which parts are secret, `after_unknown` which parts are known only after apply, and for a
replacement `replace_paths`, the attributes that force it. A reader needs leaves, not two whole objects:
so each leaf is one entry, named by its path (`tags.env`, `rule[0].port`, `labels["a.b"]`).

Two readings. `attribute_changes` (a drifted or planned update, for the drift issue): the leaves that
differ, a missing side read `(absent)`, values cut short. `attributes_of` (any change, for a run page):
an update's or a replacement's leaves that differ (and those that force the replacement), every known
leaf of a created object, every leaf of a deleted one; a side that does not exist is None, and values
are kept whole, because they are masked before they are cut (a cut secret is no longer found to mask).

Never a secret: a leaf (or any part of a subtree) marked sensitive on either side is shown as
terraform shows it, `(sensitive value)`, and a sensitive subtree is one entry whose inner paths are not
walked (their names could be secret map keys). A value known only after apply is `(known after apply)`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.runs import Attribute

SENSITIVE = "(sensitive value)"
UNKNOWN = "(known after apply)"
ABSENT = "(absent)"  # a map key or list element one side does not have
VALUE_LIMIT = 120  # characters of one value in the drift issue; longer ones are cut and end with "…"
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "))  # made once: it is used per leaf
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_MISSING = object()  # a key or element one side of an object does not have
_NO_SIDE = object()  # the whole side does not exist: a created object's before, a deleted one's after
Step = str | int  # one step of a path: an attribute or map key, a list index
Paths = tuple[tuple[Step, ...], ...]  # what is left of each replace path below the point walked


@dataclass(frozen=True)
class AttributeChange:
    """One changed leaf: its path and both values as text (masked for sensitivity, cut to length)."""

    path: str
    before: str
    after: str


def attribute_changes(change: Any) -> tuple[AttributeChange, ...]:
    """Every changed leaf of a `change` object (a dict, or anything with its `get`), in document order."""
    found = _attributes(change, change.get("before"), change.get("after"), ())
    return tuple(AttributeChange(a.path, _or(a.before), _or(a.after)) for a in found)


def attributes_of(change: Any, replace_paths: Sequence[Any] = ()) -> tuple[Attribute, ...]:
    """The attributes of any change (a dict or anything with its `get`) as a run page shows them: a null
    `before` (a create, a read) or `after` (a delete) is a side that does not exist. `replace_paths`:
    terraform's, as lists of steps; the entries at, beneath or above one are marked."""
    before, after = change.get("before"), change.get("after")
    paths = tuple(tuple(p) for p in replace_paths if isinstance(p, list))
    return _attributes(change, _NO_SIDE if before is None else before, _NO_SIDE if after is None else after, paths)


def cut(text: str, limit: int) -> str:
    """`text` at most `limit` characters long, a cut one ending with "…"."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _or(text: str | None) -> str:
    return ABSENT if text is None else text


def _attributes(change: Any, before: Any, after: Any, paths: Paths) -> tuple[Attribute, ...]:
    out: list[Attribute] = []
    marks = (change.get("before_sensitive"), change.get("after_sensitive"), change.get("after_unknown"))
    _walk(before, after, *marks, "", paths, out)
    return tuple(out)


def _sub(marks: Any, key: Step) -> Any:
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


def _below(paths: Paths, key: Step) -> Paths:
    """What is left of the replace paths one step down; a path that ended above covers all beneath it."""
    if not paths:
        return paths
    return tuple(p[1:] for p in paths if not p or (p[0] == key and type(p[0]) is type(key)))


def _absent(value: Any) -> bool:
    return value is _MISSING or value is _NO_SIDE


def _walk(
    before: Any, after: Any, b_marks: Any, a_marks: Any, unknown: Any, path: str, paths: Paths, out: list[Attribute]
) -> None:
    if not paths and not (_marked(b_marks) or _marked(a_marks) or _marked(unknown)):
        _plain(before, after, path, out)
        return
    if b_marks is True or a_marks is True or not (_fits(before, b_marks) and _fits(after, a_marks)):
        _secret(before, after, unknown, path, paths, out)
        return
    if unknown is True:  # the whole value shown: hidden when any part of it is secret
        shown = SENSITIVE if _marked(b_marks) and not _absent(before) else _text(before)
        out.append(Attribute(path or "(whole object)", shown, UNKNOWN, bool(paths)))
        return
    if _parts(before, after):
        for key in _keys(before, after, unknown):
            _walk(
                _at(before, key),
                _at(after, key),
                _sub(b_marks, key),
                _sub(a_marks, key),
                _sub(unknown, key),
                f"{path}[{key}]" if isinstance(key, int) else _join(path, key),
                _below(paths, key),
                out,
            )
        return
    if _marked(b_marks) or _marked(a_marks):  # marks beneath a value that has no parts to walk: hide it all
        _secret(before, after, unknown, path, paths, out)
    elif _shown(before, after) and (paths or not _same(before, after)):
        shown = UNKNOWN if _marked(unknown) else _text(after)  # a new shape, parts of it not yet known
        out.append(Attribute(path or "(whole object)", _text(before), shown, bool(paths)))


def _plain(before: Any, after: Any, path: str, out: list[Attribute]) -> None:
    """`_walk` where nothing at or beneath is marked and no replace path leads: most of any object."""
    if _parts(before, after):
        for key in _keys(before, after, None):
            sub = f"{path}[{key}]" if isinstance(key, int) else _join(path, key)
            _plain(_at(before, key), _at(after, key), sub, out)
    elif _shown(before, after) and not _same(before, after):
        out.append(Attribute(path or "(whole object)", _text(before), _text(after)))


def _fits(value: Any, marks: Any) -> bool:
    """Sensitivity marks shaped as the value they mark, as terraform writes them; marks of another shape
    cannot say which parts are secret, so the whole value is hidden."""
    if not isinstance(marks, dict | list) or not _marked(marks) or not isinstance(value, dict | list):
        return True
    return isinstance(value, type(marks)) and (isinstance(marks, dict) or len(marks) == len(value))


def _parts(before: Any, after: Any) -> bool:
    """Walk into the parts: both sides are maps (or lists) with something in them, or one side is and the
    other has nothing there (absent or null: a block added or removed is shown part by part)."""
    for kind in (dict, list):
        if isinstance(before, kind) and isinstance(after, kind):
            return bool(before or after)
        if isinstance(before, kind) and (after is None or _absent(after)):
            return bool(before)
        if isinstance(after, kind) and (before is None or _absent(before)):
            return bool(after)
    return False


def _keys(before: Any, after: Any, unknown: Any) -> list[Step]:
    """The keys (or indexes) either side has, and those only `after_unknown` names (a create's `id`)."""
    if isinstance(before, list) or isinstance(after, list):
        sizes = [len(v) for v in (before, after, unknown) if isinstance(v, list)]
        return list(range(max(sizes)))
    found: dict[str, None] = {}
    for side in (before, after):
        if isinstance(side, dict):
            found.update(dict.fromkeys(side))
    if isinstance(unknown, dict):
        found.update(dict.fromkeys(k for k, m in unknown.items() if _marked(m)))
    return list(found)


def _at(value: Any, key: Step) -> Any:
    if value is _NO_SIDE:
        return _NO_SIDE
    if isinstance(value, dict) and isinstance(key, str):
        return value.get(key, _MISSING)
    if isinstance(value, list) and isinstance(key, int) and key < len(value):
        return value[key]
    return _MISSING


def _shown(before: Any, after: Any) -> bool:
    """A created object's null (or absent) leaf is not shown, nor a deleted one's: terraform leaves them out."""
    if before is _NO_SIDE:
        return after is not None and after is not _MISSING
    if after is _NO_SIDE:
        return before is not None and before is not _MISSING
    return True


def _secret(before: Any, after: Any, unknown: Any, path: str, paths: Paths, out: list[Attribute]) -> None:
    """One entry for a secret (or a subtree with one in it) that changed, or forces the replacement."""
    if _absent(before) or _absent(after) or before != after or _marked(unknown) or paths:
        shown_before = None if _absent(before) else SENSITIVE
        # terraform leaves an unknown value out of `after`: a secret known only after apply is there
        shown_after = None if after is _NO_SIDE or (after is _MISSING and not _marked(unknown)) else SENSITIVE
        out.append(Attribute(path or "(whole object)", shown_before, shown_after, bool(paths)))


def _same(before: Any, after: Any) -> bool:
    """Equal as terraform means it: 1 and 1.0 are; true and 1 are not (Python's `==` would say they are),
    and neither are an absent key and a null value."""
    if _absent(before) or _absent(after):
        return before is after
    if isinstance(before, bool) or isinstance(after, bool):
        return type(before) is type(after) and before == after
    return bool(before == after)


def _join(path: str, key: str) -> str:
    if _IDENTIFIER.fullmatch(key):
        return f"{path}.{key}" if path else key
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def _text(value: Any) -> str | None:
    """A value as one line of JSON (terraform's own notation for strings, numbers, lists and maps); None
    when this side does not have it."""
    if _absent(value):
        return None
    try:
        return _JSON.encode(value)
    except (TypeError, ValueError):
        return repr(value)
