"""How far the approvals at one SHA reach into its gated changes, under the default branch's rules
(one place for the PR plan, the approval command and the held apply)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Iterable

from core.approvals import Approval, Coverage
from core.change_rules import project_gates, with_limits
from core.config import ConfigError, RepoConfig, Rule
from core.contract import CommandRequest
from core.destroy_rules import rule_coverage
from core.gated import Gated, Gates
from core.render.status import State, held_by_others
from core.results import ProjectResult
from plumbing.records import Records
from workers.adapters.github import GitHub
from workers.adapters.github.authors import Authors
from workers.adapters.github.permissions import COULD_NOT_VERIFY, Permission, may_approve, rule_eligibility
from workers.adapters.github.repo_config import base_config
from workers.adapters.store import gates as gate_store

log = logging.getLogger("plangate.gate")


async def policy(gh: GitHub, repo: str, default_branch: str) -> RepoConfig | None:
    """The default branch's config: its destroy rules and code-at-apply switches. None when it is invalid
    (nothing is approved then, and code at apply stays gated). GitHub's errors propagate: the job is
    tried again rather than publish a verdict without the rules."""
    try:
        return await base_config(gh, repo, default_branch)
    except ConfigError as exc:
        log.warning(json.dumps({"repo": repo, "destroy_rules": "default branch config invalid", "error": str(exc)}))
        return None


def gates_of(results: Iterable[ProjectResult], config: RepoConfig | None) -> dict[str, dict[str, Gated]]:
    """Each planned project's gated changes (every planned project, empty when it has none); code at apply
    is gated unless the default branch's config turned that off for the project; changes its change rules
    match, and the limits the plan as a whole is past (core.change_rules)."""
    results = list(results)
    gates = {
        r.identity: project_gates(
            r.plan,
            r.code_runs,
            gate_code=config is None or config.gates_code(r.name, r.workspace, r.dir),
            rules=config.rules if config is not None else (),
        )
        for r in results
        if r.plan is not None
    }
    changed = [r.identity for r in results if r.plan is not None and r.plan.has_changes]
    return with_limits(gates, changed, config.change_limits if config is not None else None)


async def covered(
    gh: GitHub, gates: Gates, approvals: list[Approval], *, sha: str, rules: tuple[Rule, ...] | None
) -> Coverage:
    """Coverage under `rules`, each approval bound to the objects it saw; unreadable rules (None) approve
    nothing: every gated change stays open."""
    if rules is None:
        return rule_coverage(gates, [], sha=sha, rules=(), eligible={})
    eligible = await rule_eligibility(gh, [a.approver for a in approvals], rules) if rules else {}
    return rule_coverage(gates, approvals, sha=sha, rules=rules, eligible=eligible)


async def coverage_at(
    records: Records,
    gh: GitHub,
    *,
    repo: str,
    repo_id: int,
    number: int,
    sha: str,
    gates: Gates,
    bot_login: str,
    rules: tuple[Rule, ...] | None,
) -> Coverage:
    """The approvals recorded at `sha` (Redis, else the sealed markers in the bot's comments) against its
    gated changes."""
    approvals = await gate_store.load_approvals(
        records, gh, repo=repo, repo_id=repo_id, number=number, sha=sha, bot_login=bot_login
    )
    return await covered(gh, gates, approvals, sha=sha, rules=rules)


async def may_approve_against(
    gh: GitHub, req: CommandRequest, policy: RepoConfig, authors: Awaitable[Authors]
) -> Permission:
    """The command's author against the default branch's policy and the change's `authors` (asked of
    GitHub): any error while asking refuses, since a partial list of authors could clear one of them."""
    try:
        found = await authors
    except Exception as exc:
        log.warning(json.dumps({"repo": req.repo, "number": req.number, "authors": type(exc).__name__}))
        return Permission(False, COULD_NOT_VERIFY)
    return await may_approve(
        gh,
        repo=req.repo,
        login=req.commenter,
        user_type=req.commenter_type,
        authors=found,
        policy=policy.destroy_approvers,
    )


def at_commit(records: Records, repo_id: int, sha: str, number: int, gate: tuple[State, str]) -> tuple[State, str]:
    """PR `number`'s `plangate/destroy` at `sha`, recorded, as the commit shows it: failing while another
    open PR with that head fails (reports belong to a commit, not to a PR)."""
    passed = gate[0] == "success"
    others = gate_store.gate_at_commit(records, repo_id, sha, number, passed=passed)
    return held_by_others(others) if others and passed else gate
