"""The gate's policy comes from `.plangate.yml` on the default branch, never from the PR being judged.

A pull request could otherwise add its author to `destroy_approvers.users` or allow forks for itself.
"""

from __future__ import annotations

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from workers.config import RepoConfig, parse_config

RAW = "application/vnd.github.raw+json"


async def base_config(gh: GitHubAPI, repo: str, branch: str) -> RepoConfig:
    """The default branch's config; no file means the defaults. ConfigError and API errors propagate."""
    try:
        text = await gh.getitem(f"/repos/{repo}/contents/.plangate.yml?ref={branch}", accept=RAW)
    except BadRequest as exc:
        if exc.status_code.value == 404:
            return RepoConfig()
        raise
    return parse_config(text if isinstance(text, str) else None)
