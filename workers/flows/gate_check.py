"""How far the approvals at one SHA reach, under the default branch's destroy rules (one place for the
PR plan, the approval command and the held apply)."""

from __future__ import annotations

import json
import logging

from gidgethub.abc import GitHubAPI

from core.approvals import Approval, Coverage, Destroys
from core.config import ConfigError, DestroyRule
from core.destroy_rules import rule_coverage
from workers.adapters.github.permissions import rule_eligibility
from workers.adapters.github.repo_config import base_config
from workers.adapters.store import gates as gate_store
from workers.adapters.store.records import Records

log = logging.getLogger("plangate.gate")


async def destroy_rules(gh: GitHubAPI, repo: str, default_branch: str) -> tuple[DestroyRule, ...] | None:
    """The default branch's destroy rules; None when its config is invalid (nothing is approved then).
    GitHub's errors propagate: the job is tried again rather than publish a verdict without the rules."""
    try:
        return (await base_config(gh, repo, default_branch)).destroy_rules
    except ConfigError as exc:
        log.warning(json.dumps({"repo": repo, "destroy_rules": "default branch config invalid", "error": str(exc)}))
        return None


async def covered(
    gh: GitHubAPI, destroys: Destroys, approvals: list[Approval], *, sha: str, rules: tuple[DestroyRule, ...] | None
) -> Coverage:
    """Coverage under `rules`; unreadable rules (None) approve nothing: every destroy stays open."""
    if rules is None:
        return rule_coverage(destroys, [], sha=sha, rules=(), eligible={})
    eligible = await rule_eligibility(gh, [a.approver for a in approvals], rules) if rules else {}
    return rule_coverage(destroys, approvals, sha=sha, rules=rules, eligible=eligible)


async def coverage_at(
    records: Records,
    gh: GitHubAPI,
    *,
    repo: str,
    repo_id: int,
    number: int,
    sha: str,
    destroys: Destroys,
    bot_login: str,
    default_branch: str,
) -> Coverage:
    """The approvals recorded at `sha` (Redis, else the bot's comments) against its destroys."""
    approvals = await gate_store.load_approvals(
        records, gh, repo=repo, repo_id=repo_id, number=number, sha=sha, bot_login=bot_login
    )
    return await covered(gh, destroys, approvals, sha=sha, rules=await destroy_rules(gh, repo, default_branch))
