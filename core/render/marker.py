"""Hidden machine-readable markers in comments, bedevere style (pure).

`<!-- plangate:KIND {json} -->` is invisible on GitHub and lets plangate find its own comments
(plan parts, approvals) again. Anyone can type a marker, and anyone with write access can edit the
App's own comments, so a marker that can move the gate (an approval) is sealed: it carries a MAC
with a key only the workers hold (`sealed_marker`), and counts only when it verifies (`open_sealed`).
"""

from __future__ import annotations

import hashlib
import hmac
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


# A sealed marker carries a MAC after its JSON: `<!-- plangate:KIND {json} MAC -->`. The MAC is over the
# exact bytes of the JSON as written (not a re-serialisation), so no byte of it can change and verify.
_SEALED = re.compile(r"<!-- plangate:([a-z][a-z0-9_-]{0,39}) (\{.*?\}) ([0-9a-f]{64}) -->", re.DOTALL)


def _seal(key: bytes, kind: str, context: str, payload: str) -> str:
    message = f"plangate-marker\0{kind}\0{context}\0".encode() + payload.encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def sealed_marker(kind: str, key: bytes, context: str, **fields: Any) -> str:
    """A marker only the holder of `key` can write, bound to `context` (where it may appear, e.g. the
    repository and issue it belongs to): copied anywhere else, or changed in any byte, it verifies nowhere."""
    plain = marker(kind, **fields)
    payload = plain[len(f"<!-- plangate:{kind} ") : -len(" -->")]
    return f"<!-- plangate:{kind} {payload} {_seal(key, kind, context, payload)} -->"


def open_sealed(body: object, kind: str, key: bytes, context: str) -> dict[str, Any] | None:
    """The fields of the sealed `kind` marker that opens `body`, when its MAC verifies for `context`;
    None for anything else (absent, another kind, altered, sealed for another context). Never raises."""
    if not isinstance(body, str):
        return None
    found = _SEALED.match(body)
    if found is None or found.group(1) != kind:
        return None
    payload, mac = found.group(2), found.group(3)
    if not hmac.compare_digest(mac, _seal(key, kind, context, payload)):
        return None
    try:
        fields = json.loads(payload)
    except (ValueError, RecursionError):
        return None
    return fields if isinstance(fields, dict) else None
