"""What plangate last wrote in each of its comments and issue bodies (sealed), so that a change anyone
else makes is noticed: such a comment is never a source for a gate decision, and plangate puts its
own text back.

Anyone with write access can edit or delete any comment in a repository, the App's included, and
GitHub's answers do not say who did. The webhook (`issue_comment` edited/deleted) says who; this
record says what the text was. Bodies are kept zlib-compressed, as long as gate records live.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from core import redis_keys
from core.render.controls import printable
from plumbing.records import Records

TTL = redis_keys.GATE_TTL


@dataclass(frozen=True)
class Written:
    """One comment (or issue body) as plangate last wrote it."""

    number: int  # the PR or issue it is on
    digest: str  # of the body (body_digest)
    at: str  # GitHub's `updated_at` of that write
    body: str
    restored: str | None = None  # GitHub's time plangate last put its text back (approvals must come after)
    restored_from: str | None = None  # who had changed it, as the webhook said (None: found by plangate)


def body_digest(body: str) -> str:
    """GitHub keeps a body as sent; line endings are normalised only so a CRLF round trip is not a change."""
    return hashlib.sha256(body.replace("\r\n", "\n").encode()).hexdigest()


def _encode(written: Written) -> str:
    data = asdict(written)
    data["body"] = base64.b64encode(zlib.compress(written.body.encode(), 6)).decode("ascii")
    return json.dumps(data)


def _decode(text: str | None) -> Written | None:
    if text is None:
        return None
    try:
        data: dict[str, Any] = json.loads(text)
        data["body"] = zlib.decompress(base64.b64decode(data["body"])).decode()
        return Written(**data)
    except (ValueError, TypeError, KeyError, zlib.error):
        return None


def _key(repo_id: int, comment_id: int | None, issue: int | None) -> str:
    return (
        redis_keys.written(repo_id, comment_id)
        if comment_id is not None
        else redis_keys.written_issue(repo_id, issue or 0)
    )


def remember(
    records: Records,
    repo_id: int,
    answer: dict[str, Any],
    number: int,
    *,
    issue: bool = False,
    restored_from: str | None = None,
    restoring: bool = False,
) -> Written:
    """Record what GitHub answered to plangate's own create or edit (`answer`: the comment, or the issue).
    `restoring`: the write put plangate's text back after `restored_from` (None: someone) changed it."""
    body = str(answer.get("body") or "")
    at = str(answer.get("updated_at") or answer.get("created_at") or "")
    written = Written(number, body_digest(body), at, body, at if restoring else None, restored_from)
    key = _key(repo_id, None if issue else int(answer["id"]), number if issue else None)
    records.set(key, _encode(written), ex=TTL)
    return written


def intend(records: Records, repo_id: int, comment_id: int, number: int, body: str) -> None:
    """Record an edit plangate is about to make, before it makes it: a check that reads the comment
    meanwhile then puts back the text being written, never the one it replaces. The text as GitHub will
    keep it: the client drops control characters from every body (core.render.backstop)."""
    body = printable(body)
    written = Written(number=number, digest=body_digest(body), at="", body=body)
    records.set(redis_keys.written(repo_id, comment_id), _encode(written), ex=TTL)


def lookup(records: Records, repo_id: int, comment_id: int) -> Written | None:
    return _decode(records.get(redis_keys.written(repo_id, comment_id)))


def lookup_issue(records: Records, repo_id: int, number: int) -> Written | None:
    return _decode(records.get(redis_keys.written_issue(repo_id, number)))


def forget(records: Records, repo_id: int, comment_id: int) -> None:
    records.conn.delete(redis_keys.written(repo_id, comment_id))


def altered(records: Records, repo_id: int, comments: Iterable[dict[str, Any]]) -> set[int]:
    """Ids of plangate's comments among `comments` (as GitHub lists them) whose body is not what plangate
    last wrote. A comment with no record (Redis lost it) is not known to be altered."""
    listed = [c for c in comments if isinstance(c.get("id"), int)]
    known = records.get_many([redis_keys.written(repo_id, c["id"]) for c in listed])
    out = set()
    for comment, text in zip(listed, known, strict=True):
        written = _decode(text)
        if written is not None and not matches(written, comment):
            out.add(int(comment["id"]))
    return out


def matches(written: Written, answer: dict[str, Any], *, issue: bool = False) -> bool:
    """Is the comment (or issue) GitHub shows still what plangate wrote? Same body, and (a comment) not
    edited since. An issue's `updated_at` moves with every comment on it: only its body tells."""
    body = str(answer.get("body") or "")
    at = "" if issue else str(answer.get("updated_at") or "")
    return body_digest(body) == written.digest and (not at or not written.at or at <= written.at)
