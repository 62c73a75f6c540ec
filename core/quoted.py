"""Values quoted in error messages, bounded (pure): a repr that never looks further than what it prints.

A config or a CLI configuration can hold a value of any size (and, through YAML aliases, a structure
that names a billion values): `repr()` of it, even cut afterwards, would build all of it first.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

SHOWN = 60  # characters of a value an error message quotes

_KINDS = {bool: "boolean", int: "number", float: "number", str: "string", list: "list", dict: "mapping"}


def describe(value: object) -> str:
    """`string 'x'`, `list [1, 2]`: a value's kind and its start, for "expected …, got …"."""
    if value is None:
        return "nothing (null)"
    return f"{_KINDS.get(type(value), type(value).__name__)} {shown(value)}"


def shown(value: object, limit: int = SHOWN) -> str:
    """A repr of `value` cut to about `limit` characters, built without looking at more of it."""
    out: list[str] = []
    _shown(value, out, limit)
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _shown(value: object, out: list[str], budget: int) -> int:
    """Append a repr of `value` to `out`, stopping once `budget` characters are written; what is left."""
    if budget <= 0:
        return 0
    if isinstance(value, str):
        piece = repr(value[:budget]) + ("…" if len(value) > budget else "")
    elif isinstance(value, list | dict):
        return _container(value, out, budget)
    elif isinstance(value, bool | int | float | dt.date | type(None)):
        try:
            piece = repr(value)  # short: an int has at most 4,300 digits here
        except ValueError:  # an integer past Python's 4,300 digits (YAML's base 60 can make one)
            piece = "<a number too long to print>"
    else:
        piece = type(value).__name__
    out.append(piece)
    return budget - len(piece)


def _container(value: list[Any] | dict[Any, Any], out: list[str], budget: int) -> int:
    opening, closing = ("[", "]") if isinstance(value, list) else ("{", "}")
    out.append(opening)
    budget -= 1
    items = value if isinstance(value, list) else value.items()
    for i, item in enumerate(items):
        if budget <= 0:
            out.append("…")
            return 0
        if i:
            out.append(", ")
            budget -= 2
        if isinstance(value, dict):
            budget = _shown(item[0], out, budget)
            out.append(": ")
            budget = _shown(item[1], out, budget - 2)
        else:
            budget = _shown(item, out, budget)
    out.append(closing)
    return budget - 1
