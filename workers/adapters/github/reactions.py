"""Reactions on a command's comment: `eyes` on receipt, then how it ended."""

from __future__ import annotations

from gidgethub.abc import GitHubAPI


async def react_to_comment(gh: GitHubAPI, repo: str, comment_id: int, content: str) -> None:
    """On a conversation comment."""
    await gh.post(f"/repos/{repo}/issues/comments/{comment_id}/reactions", data={"content": content})


async def react_to_review_comment(gh: GitHubAPI, repo: str, comment_id: int, content: str) -> None:
    """On a comment in a review thread."""
    await gh.post(f"/repos/{repo}/pulls/comments/{comment_id}/reactions", data={"content": content})
