"""Hidden machine-readable markers in comments, bedevere style (pure).

`<!-- plangate:KIND {json} -->` is invisible on GitHub and lets plangate find its own comments
(plan parts, approvals) again. Anyone can type a marker, so a consumer must also check that the
comment was written by the App before trusting it.
"""

from __future__ import annotations

import json
import re
from typing import Any

_KIND = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_MARKER = re.compile(r"<!-- plangate:([a-z][a-z0-9_-]{0,39}) (.*?) -->", re.DOTALL)


def marker(kind: str, **fields: Any) -> str:
    """An HTML comment carrying `kind` and the JSON-serialisable `fields`."""
    if not _KIND.fullmatch(kind):
        raise ValueError(f"marker kind must match {_KIND.pattern}: {kind!r}")
    payload = json.dumps(fields, sort_keys=True, ensure_ascii=True)
    # `<` and `>` escaped as JSON \u escapes so no value can close the HTML comment early.
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<!-- plangate:{kind} {payload} -->"


def parse_marker(body: object) -> tuple[str, dict[str, Any]] | None:
    """The first well-formed marker in `body` as (kind, fields); None if there is none. Never raises."""
    if not isinstance(body, str):
        return None
    for match in _MARKER.finditer(body):
        try:
            fields = json.loads(match.group(2))
        except (ValueError, RecursionError):
            continue
        if isinstance(fields, dict):
            return match.group(1), fields
    return None
