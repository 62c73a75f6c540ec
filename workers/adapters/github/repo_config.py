"""The gate's policy comes from `.plangate.yml` on the default branch, never from the PR being judged.

A pull request could otherwise add its author to `destroy_approvers.users` or allow forks for itself.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core.config import ConfigError, RepoConfig, parse_config
from core.contract import PushRequest

ZERO_SHA = "0" * 40
RAW = "application/vnd.github.raw+json"
log = logging.getLogger("plangate.config")


async def base_config(gh: GitHubAPI, repo: str, branch: str) -> RepoConfig:
    """The default branch's config (`branch` may also be a commit: policy_ref); no file means the
    defaults. ConfigError (naming the branch) and GitHub's errors propagate: going on without the
    config would publish what its `mask_patterns` hide, so the job fails closed or is tried again."""
    try:
        text = await gh.getitem(f"/repos/{repo}/contents/.plangate.yml?ref={branch}", accept=RAW)
    except BadRequest as exc:
        if exc.status_code.value == 404:
            return RepoConfig()
        raise
    try:
        return parse_config(text if isinstance(text, str) else None)
    except ConfigError as exc:
        raise ConfigError(exc.key, f"{exc.problem} (on the default branch `{branch}`)") from None


async def base_config_or_none(gh: GitHubAPI, repo: str, branch: str) -> RepoConfig | None:
    """The default branch's config, or None when it is invalid (a fork's PR is then refused)."""
    try:
        return await base_config(gh, repo, branch)
    except ConfigError as exc:
        log.warning(json.dumps({"repo": repo, "default_branch_config": "invalid", "error": str(exc)}))
        return None


async def mask_patterns(gh: GitHubAPI, repo: str, branch: str, server: Sequence[str]) -> list[str]:
    """The server's patterns plus the default branch's `mask_patterns` (a PR's own never count)."""
    return [*server, *(await base_config(gh, repo, branch)).mask_patterns]


def policy_ref(push: PushRequest) -> str:
    """Where the policy that judges a push's apply is read: the default branch as it was *before* the
    push. The merge of a PR that loosens `.plangate.yml` (allows self-approval, drops a destroy rule or a
    mask, turns a gate off) is judged by the policy it changes, like its plan was. A push to another
    apply branch leaves the default branch as it is; a new branch has no before."""
    if push.branch != push.default_branch:
        return push.default_branch
    return push.after if push.before == ZERO_SHA else push.before
