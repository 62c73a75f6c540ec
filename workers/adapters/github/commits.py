"""Commits and branches: how two commits compare, and where a branch points."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from gidgethub.abc import GitHubAPI


async def compare(gh: GitHubAPI, repo: str, base: str, head: str) -> dict[str, Any]:
    """GitHub's comparison of `base...head`: its `status` (ahead, behind…), `commits` and `files`."""
    found: dict[str, Any] = await gh.getitem(f"/repos/{repo}/compare/{base}...{head}")
    return found


async def branch_head(gh: GitHubAPI, repo: str, branch: str) -> str:
    """The SHA the branch points at now."""
    found = await gh.getitem(f"/repos/{repo}/branches/{quote(branch, safe='')}")
    return str(found["commit"]["sha"])
