"""Approvals as plangate's comments carry them (pure): read back from the sealed markers in the bot's
own replies when Redis lost its record, which command each one answered, and the sealed revocation a
dismissed review leaves, so a rebuilt list never counts an approval that was taken back."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any

from core.approvals import MARKER_VERSION, Approval, Seen, context
from core.render.marker import open_sealed, sealed_marker

# Inflating a compressed marker (core.approvals) stops here.
_MAX_INFLATED = 16 * 1024 * 1024


def _inflate(text: object) -> object:
    if not isinstance(text, str):
        return None
    try:
        raw = base64.b64decode(text, validate=True)
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, _MAX_INFLATED)
        if inflater.unconsumed_tail or not inflater.eof:
            return None
        return json.loads(data)
    except (binascii.Error, zlib.error, ValueError, RecursionError):
        return None


def _seen_of(fields: Mapping[str, Any]) -> frozenset[Seen] | None:
    """The approved changes (plain or compressed) when well-formed, else None."""
    if ("changes" in fields) == ("changes_z" in fields):
        return None
    raw = fields["changes"] if "changes" in fields else _inflate(fields["changes_z"])
    if not isinstance(raw, dict) or not raw:
        return None
    seen: set[Seen] = set()
    for project, changes in raw.items():
        if not project or not isinstance(changes, dict) or not changes:
            return None
        for key, obj in changes.items():
            if not key or not isinstance(obj, str):
                return None
            seen.add((project, key, obj))
    return frozenset(seen)


def approval_from_marker(body: object, *, key: bytes, repo_id: int, number: int, sha: str) -> Approval | None:
    """The approval in a comment body for `sha`; None unless a sealed marker opens the body, verifies for
    this repository's `number`, and is of `sha`."""
    fields = open_sealed(body, "approval", key, context(repo_id, number))
    if fields is None or fields.get("v") != MARKER_VERSION or fields.get("sha") != sha or not sha:
        return None
    approver, plan = fields.get("approver"), fields.get("plan")
    if not isinstance(approver, str) or not approver or not isinstance(plan, str):
        return None
    seen = _seen_of(fields)
    return Approval(approver, sha, seen, plan) if seen else None


def answered_approval(body: object, *, key: bytes, repo_id: int, number: int) -> tuple[int, str, str] | None:
    """(the command it answers, its SHA, its approver) of the sealed approval opening a bot reply."""
    fields = open_sealed(body, "approval", key, context(repo_id, number))
    if fields is None:
        return None
    reply_to, sha, approver = fields.get("reply_to"), fields.get("sha"), fields.get("approver")
    if not isinstance(reply_to, int) or not isinstance(sha, str) or not isinstance(approver, str):
        return None
    return reply_to, sha, approver


def revocation_marker(*, key: bytes, repo_id: int, number: int, approver: str, shas: Iterable[str], review: int) -> str:
    """The sealed `plangate:revoked` marker of a dismissed review: `approver`'s approvals at `shas`
    written before it no longer count, also when they are rebuilt from comments."""
    return sealed_marker("revoked", key, context(repo_id, number), approver=approver, shas=sorted(shas), review=review)


def _revoked(body: object, *, key: bytes, repo_id: int, number: int, sha: str) -> str | None:
    """The approver a sealed revocation opening `body` takes back at `sha`, if any."""
    fields = open_sealed(body, "revoked", key, context(repo_id, number))
    if fields is None or sha not in (fields.get("shas") or ()):
        return None
    approver = fields.get("approver")
    return approver if isinstance(approver, str) else None


def approvals_from_comments(
    comments: Iterable[Mapping[str, Any]],
    *,
    bot_login: str,
    key: bytes,
    repo_id: int,
    number: int,
    sha: str,
    altered: Collection[int] = (),
) -> list[Approval]:
    """Approvals for `sha` sealed in the bot's own comments (in the order written), oldest first, less
    those a later sealed revocation (a dismissed review) took back. A marker anyone else wrote never
    verifies; `altered`: ids of the bot's comments someone else changed, never a source."""
    found: list[Approval] = []
    own = bot_login.casefold()
    for comment in comments:
        user = comment.get("user")
        login = user.get("login") if isinstance(user, Mapping) else None
        comment_id = comment.get("id")
        if not isinstance(login, str) or login.casefold() != own or comment_id in altered:
            continue
        taken_back = _revoked(comment.get("body"), key=key, repo_id=repo_id, number=number, sha=sha)
        if taken_back is not None:
            found = [a for a in found if a.approver.casefold() != taken_back.casefold()]
            continue
        approval = approval_from_marker(comment.get("body"), key=key, repo_id=repo_id, number=number, sha=sha)
        if approval is not None:
            found.append(replace(approval, comment_id=comment_id if isinstance(comment_id, int) else None))
    return found
