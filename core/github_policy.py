"""What to do when a GitHub call fails (pure): which requests may be repeated, and how long to wait.

GitHub's guidance: expect 5xx and dropped connections and back off; on the primary rate limit
(`x-ratelimit-remaining: 0`) wait until `x-ratelimit-reset`; on a secondary limit (403/429) wait
`retry-after` seconds, else at least a minute, backing off. A request is repeated only when doing it
twice changes nothing: reads, and writes that set rather than add (status create, comment PATCH,
labels, reactions, token minting). Creating a comment or an issue is repeated only after checking
that the first attempt did not land (workers.adapters.github.client).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

Kind = Literal["read", "idempotent", "create"]
READ: Kind = "read"
IDEMPOTENT: Kind = "idempotent"
CREATE: Kind = "create"
SECONDARY_MIN_WAIT = 60.0  # GitHub: "wait at least one minute" when no retry-after is given
SECONDARY_MAX_WAIT = 15 * 60.0

_CREATES = (
    re.compile(r"/repos/[^/]+/[^/]+/issues/\d+/comments"),  # a new comment
    re.compile(r"/repos/[^/]+/[^/]+/pulls/\d+/comments/\d+/replies"),  # a new reply in a review thread
    re.compile(r"/repos/[^/]+/[^/]+/issues"),  # a new issue
)


def request_kind(method: str, path: str) -> Kind:
    """How safe it is to send this request twice. `path` without the query string."""
    method = method.upper()
    if method in ("GET", "HEAD"):
        return READ
    if method == "POST" and any(p.fullmatch(path) for p in _CREATES):
        return CREATE
    # PATCH/PUT/DELETE, and POSTs that set state: statuses, reactions, access tokens, and check runs (a
    # repeated create is a second run of the same name and content; GitHub shows the newest)
    return IDEMPOTENT


def endpoint_class(method: str, path: str) -> str:
    """A low-cardinality name for metrics: `POST issues/comments`, `GET pulls/files`, ..."""
    parts = [p for p in path.split("/") if p and not p.isdigit() and not re.fullmatch(r"[0-9a-f]{40}", p)]
    if parts[:1] == ["repos"]:
        parts = parts[3:]
    return f"{method.upper()} {'/'.join(parts[:2]) or '/'}"


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def rate_limit_wait(
    status: int, headers: Mapping[str, str], message: str, now: float, attempt: int
) -> tuple[str, float] | None:
    """("primary" | "secondary", seconds to wait) when the answer is a rate limit, else None.

    `attempt`: 1 for the first limited answer of this request; a secondary limit without
    `retry-after` waits a minute, then twice as long each time, up to 15 minutes."""
    if status not in (403, 429):
        return None
    retry_after = _header(headers, "retry-after")
    if retry_after is not None and retry_after.strip().isdigit():
        return "secondary", max(1.0, float(retry_after))
    remaining, reset = _header(headers, "x-ratelimit-remaining"), _header(headers, "x-ratelimit-reset")
    if remaining == "0" and reset is not None and reset.strip().isdigit():
        return "primary", max(1.0, float(reset) - now + 1.0)
    if status == 429 or "secondary rate limit" in message.lower() or "abuse" in message.lower():
        return "secondary", min(SECONDARY_MAX_WAIT, SECONDARY_MIN_WAIT * 2 ** (attempt - 1))
    return None


def remaining(headers: Mapping[str, str]) -> int | None:
    """`x-ratelimit-remaining` of an answer, when GitHub sent one."""
    value = _header(headers, "x-ratelimit-remaining")
    return int(value) if value is not None and value.strip().isdigit() else None
