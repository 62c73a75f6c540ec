"""Issues (a pull request is one too): read one, list its comments, close it, find the open ones of a label."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gidgethub.abc import GitHubAPI


async def get_issue(gh: GitHubAPI, repo: str, number: int) -> dict[str, Any]:
    """The issue as GitHub shows it now (its body, author, creation and last edit)."""
    issue: dict[str, Any] = await gh.getitem(f"/repos/{repo}/issues/{number}")
    return issue


def issue_comments(gh: GitHubAPI, repo: str, number: int) -> AsyncIterator[dict[str, Any]]:
    """The conversation's comments, oldest first, page by page."""
    return gh.getiter(f"/repos/{repo}/issues/{number}/comments?per_page=100")


def open_issues_labelled(gh: GitHubAPI, repo: str, label: str) -> AsyncIterator[dict[str, Any]]:
    """The open issues carrying `label`, page by page."""
    return gh.getiter(f"/repos/{repo}/issues?labels={label}&state=open&per_page=100")


async def close_issue(gh: GitHubAPI, repo: str, number: int) -> None:
    await gh.patch(f"/repos/{repo}/issues/{number}", data={"state": "closed"})


async def set_issue_body(gh: GitHubAPI, repo: str, number: int, body: str) -> dict[str, Any]:
    """The issue's body replaced, as GitHub answers (the caller records what it wrote)."""
    issue: dict[str, Any] = await gh.patch(f"/repos/{repo}/issues/{number}", data={"body": body})
    return issue
