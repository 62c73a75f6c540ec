"""One conversation comment, by id: read, replace or post its text. A deleted comment is None, not an
error: whoever asks decides what its absence means.

These are the bare requests; workers.adapters.github.vcs adds the records of what plangate wrote.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI


def _gone(exc: BadRequest) -> bool:
    return exc.status_code == HTTPStatus.NOT_FOUND


async def get_comment(gh: GitHubAPI, repo: str, comment_id: int) -> dict[str, Any] | None:
    """The comment as GitHub shows it; None once it was deleted."""
    try:
        comment: dict[str, Any] = await gh.getitem(f"/repos/{repo}/issues/comments/{comment_id}")
    except BadRequest as exc:
        if not _gone(exc):
            raise
        return None
    return comment


async def set_comment_body(gh: GitHubAPI, repo: str, comment_id: int, body: str) -> dict[str, Any] | None:
    """The comment's text replaced, as GitHub answers; None when it was deleted."""
    try:
        comment: dict[str, Any] = await gh.patch(f"/repos/{repo}/issues/comments/{comment_id}", data={"body": body})
    except BadRequest as exc:
        if not _gone(exc):
            raise
        return None
    return comment


async def create_comment(gh: GitHubAPI, repo: str, number: int, body: str) -> dict[str, Any]:
    """A new comment on issue or PR `number`, as GitHub answers."""
    comment: dict[str, Any] = await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})
    return comment
