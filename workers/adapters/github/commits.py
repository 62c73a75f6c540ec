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


async def commit_logins(gh: GitHubAPI, repo: str, sha: str) -> tuple[str, ...]:
    """The logins GitHub maps the commit's author and committer to (none for an unmapped email)."""
    found = await gh.getitem(f"/repos/{repo}/commits/{sha}")
    people = [found.get("author"), found.get("committer")]
    return tuple(dict.fromkeys(str(p["login"]) for p in people if isinstance(p, dict) and p.get("login")))
