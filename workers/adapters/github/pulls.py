"""Pull requests: one by number, those of a commit, the open ones of a repository."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gidgethub.abc import GitHubAPI


async def get_pull(gh: GitHubAPI, repo: str, number: int) -> dict[str, Any]:
    """GitHub's pull object as it is now (head, base, merged, author…)."""
    pull: dict[str, Any] = await gh.getitem(f"/repos/{repo}/pulls/{number}")
    return pull


def pulls_of_commit(gh: GitHubAPI, repo: str, sha: str) -> AsyncIterator[dict[str, Any]]:
    """The pull requests GitHub associates with a commit (merged ones included), page by page."""
    return gh.getiter(f"/repos/{repo}/commits/{sha}/pulls")


def open_pulls(gh: GitHubAPI, repo: str) -> AsyncIterator[dict[str, Any]]:
    """Every open pull request of the repository, page by page."""
    return gh.getiter(f"/repos/{repo}/pulls?state=open&per_page=100")
