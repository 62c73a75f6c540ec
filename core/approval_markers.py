"""Approvals as plangate's comments carry them (pure): read back from the sealed markers in the bot's
own replies when Redis lost its record, which command each one answered, and the sealed revocation a
dismissed review leaves, so a rebuilt list never counts an approval that was taken back."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import Any

from core.approvals import Approval, approval_from_marker, context
from core.render.marker import open_sealed, sealed_marker


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
