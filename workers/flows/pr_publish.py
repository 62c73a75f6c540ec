"""Publish a PR's plans: one comment (edited in place), the plan and destroy reports, and the gate's
records (the destroys as shown, what the next push may carry, which plans a main push makes stale).
Nothing is published for a SHA the PR has moved on from."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from core import redis_keys
from core.approvals import Coverage
from core.contract import DESTROY_CONTEXT, PLAN_CONTEXT, PlanRequest
from core.gated import Gated, plan_digest, published_digest
from core.plan import summary_line
from core.render.failed_apply import with_banner
from core.render.mask import mask
from core.render.plan import render_apply_order, render_plan_comments, render_planned_on_merge, render_too_many_files
from core.render.replies import approval_status
from core.render.run_links import run_urls
from core.render.status import State, destroy_status, plan_status
from core.results import ProjectResult
from plumbing.runlog import record_run
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.repo_config import mask_patterns
from workers.adapters.store import audit, pr_heads, pr_plans
from workers.adapters.store import gates as gate_store
from workers.context import WorkerContext
from workers.flows import carry, failed_applies, gate_check, plan_progress, run_pages

log = logging.getLogger("plangate.plan")


def is_current(ctx: WorkerContext, req: PlanRequest) -> bool:
    """False once a newer SHA of the PR started planning: its results must not be posted."""
    head = pr_heads.current(ctx.redis, req.repo_id, req.pr)
    return head is None or head == req.sha


async def bot_login(ctx: WorkerContext) -> str:
    return await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)


def meta_key(req: PlanRequest) -> str:
    return redis_keys.plan_meta(req.repo_id, req.pr, req.sha)


async def _concurrently(
    comment: Awaitable[vcs.Published], report: Callable[[str], Awaitable[object]], shown: str | None, pull: str
) -> vcs.Published:
    """The plan comment and the reports that link to it, at once. An edit keeps the comment's URL,
    `shown`; a PR's first comment has none until GitHub answers, so its reports link to the PR page
    `pull` rather than wait a round trip on the PR's path. A comment deleted meanwhile and posted anew
    is reported again."""
    edited: vcs.Published = (await vcs.at_once(comment, report(shown or pull)))[0]
    if shown is not None and edited.url != shown:
        await report(edited.url or pull)
    return edited


async def _report(
    gh: GitHub,
    req: PlanRequest,
    plan: tuple[State, str],
    gate: tuple[State, str],
    text: str,
    waiting: str | None,
    url: str,
) -> None:
    await vcs.at_once(  # two contexts, each complete in itself: one round trip, not two
        vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, *plan, url, summary=text),
        vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, *gate, url, summary=text, approve=waiting),
    )


def _planned_at(req: PlanRequest, result: ProjectResult) -> str:
    """The commit whose code a result planned: an earlier head it was carried from, the test merge, the head."""
    return result.carried_from or req.code_sha or req.sha


@dataclass(frozen=True)
class Judged:
    """The gate on a PR's plans at this SHA: each project's gated changes, and how far the recorded
    approvals reach (None when nothing is gated or a plan failed: there is nothing to approve yet)."""

    gates: dict[str, dict[str, Gated]]
    failed: list[str]  # identities whose plan failed
    digest: str  # of every plan's gated changes, as the comment shows them
    coverage: Coverage | None

    @property
    def waiting(self) -> str | None:
        """The digest an approval must name, while approvals are still missing."""
        cov = self.coverage
        return self.digest if cov is not None and not cov.complete and not cov.never else None


async def publish(
    ctx: WorkerContext, req: PlanRequest, results: list[ProjectResult], made: dict[str, tuple[str, str]] | None = None
) -> None:
    """One comment (edited in place) and the combined statuses, unless a newer SHA took over. `made`:
    identity → (job id, SHA planned at) of each plan, for the next push to carry forward, and the run
    (core.runs.run_id) each plan is: its page gets the gate's verdict, and links when PLANGATE_PUBLIC_URL
    is set."""
    if not is_current(ctx, req):
        log.info(json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "outcome": "superseded"}))
        return
    found = ctx.records.get_json(meta_key(req))
    meta = found if isinstance(found, dict) else {}
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        if "mask_patterns" in meta:
            patterns = [*ctx.settings.mask_patterns, *meta["mask_patterns"]]
        else:  # the dispatch's record is gone (Redis lost it, or the key that seals it changed): ask again
            patterns = await mask_patterns(gh, req.repo, req.default_branch, ctx.settings.mask_patterns)
        login = await bot_login(ctx)
        judged = await _judge(ctx, gh, req, results, login)
        cov = judged.coverage
        runs = run_pages.run_ids(made, [r.identity for r in results])
        bodies = render_plan_comments(
            results,
            pr=req.pr,
            sha=req.sha,
            mask_patterns=patterns,
            note=_note(req, meta),
            notes=cov.notes if cov is not None else None,
            gates=judged.gates,
            voided=cov.voided if cov is not None else frozenset(),
            links=run_urls(ctx.settings.public_url, runs),
        )
        bodies[0] = with_banner(bodies[0], failed_applies.banner_for(ctx, req.repo_id, {r.identity for r in results}))
        gate = destroy_status(results) if cov is None else approval_status(cov)
        gate = gate_check.at_commit(ctx.records, req.repo_id, req.sha, req.pr, gate)
        identities = [r.identity for r in results]
        link = run_pages.report_url(ctx.settings.public_url, identities, runs, cov, judged.failed)
        async with plan_progress.publishing(ctx, req):  # no progress edit lands after the plan
            published = await _comment_and_reports(ctx, gh, req, results, bodies, judged, login, gate, runs, link)
        _remember(ctx, req, results, made, meta, judged)
        run_pages.write_gates(ctx.records, runs, judged.gates, cov, gate)
        run_pages.mask_like_the_comment(ctx.records, runs, results, patterns)
    _record_runs(ctx, req, results, patterns, gate, published.url, runs)
    log.info(json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "outcome": "published"}))


def _note(req: PlanRequest, meta: dict[str, Any]) -> str:
    """What the comment says above the plans: changed files GitHub could not list, a test-merge plan."""
    notes = [render_too_many_files(vcs.MAX_PR_FILES)] if meta.get("changes_unknown") else []
    if req.code_sha:
        notes.append(render_planned_on_merge(req.sha, req.code_sha, req.default_branch))
    if isinstance(meta.get("order"), str):
        notes.append(render_apply_order(meta["order"]))
    return "\n\n".join(notes)


async def _judge(ctx: WorkerContext, gh: GitHub, req: PlanRequest, results: list[ProjectResult], login: str) -> Judged:
    """The gated changes under the default branch's rules, and the approvals recorded for them. The rules
    are read whenever something would change: a change rule or a limit may gate any change."""
    failed = [r.identity for r in results if r.plan is None]
    gated = any(r.plan is not None and (r.plan.has_changes or r.code_runs) for r in results)
    policy = await gate_check.policy(gh, req.repo, req.default_branch) if gated else None
    gates = gate_check.gates_of(results, policy)
    digest = published_digest(
        {r.identity: plan_digest(_planned_at(req, r), r.identity, gates[r.identity]) for r in results if r.plan}
    )
    cov = None
    if not failed and any(gates.values()):
        cov = await gate_check.coverage_at(
            ctx.records,
            gh,
            repo=req.repo,
            repo_id=req.repo_id,
            number=req.pr,
            sha=req.sha,
            gates=gates,
            bot_login=login,
            rules=policy.rules if policy is not None else None,
        )
    return Judged(gates, failed, digest, cov)


async def _comment_and_reports(
    ctx: WorkerContext,
    gh: GitHub,
    req: PlanRequest,
    results: list[ProjectResult],
    bodies: list[str],
    judged: Judged,
    login: str,
    gate: tuple[State, str],
    runs: dict[str, str],
    link: str | None,
) -> vcs.Published:
    """The plan comment and both reports, at once; the gate's record of the plan (with the runs that made
    it, for a later approval to update their pages) is saved once the comment shows it: an approval is
    measured against when its author could see it. `link`: the run page the reports point at, else the
    comment."""

    async def commented() -> vcs.Published:
        published = await vcs.upsert_comments(
            gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=login, kind="plan", bodies=bodies
        )
        record = gate_store.PlanRecord(
            gates=judged.gates, failed=judged.failed, published_at=published.at, digest=judged.digest, runs=runs
        )
        gate_store.save_plan(ctx.records, req.repo_id, req.pr, req.sha, record)
        return published

    text = bodies[0].partition("\n")[2]  # the plan comment's first part, without its marker
    reports = functools.partial(_report, gh, req, plan_status(results), gate, text, judged.waiting)
    if link is not None:  # the run page is known before the comment is written: no need to wait for it
        published: vcs.Published = (await vcs.at_once(commented(), reports(link)))[0]
        return published
    known = vcs.known_url(ctx.records, req.repo_id, req.pr, "plan")
    return await _concurrently(commented(), reports, known, req.pull_url())


def _remember(
    ctx: WorkerContext,
    req: PlanRequest,
    results: list[ProjectResult],
    made: dict[str, tuple[str, str]] | None,
    meta: dict[str, Any],
    judged: Judged,
) -> None:
    """What the next push may carry, which plans a push to main makes stale, and a blocked gate's audit."""
    if made is not None:
        ok = {r.identity for r in results if r.plan is not None}
        carry.remember(ctx, req, meta.get("inputs", {}), {i: m for i, m in made.items() if i in ok})
    planned = pr_plans.PlannedPR(req.pr, req.sha, req.author, req.fork, [r.identity for r in results])
    pr_plans.remember(ctx.records, req.repo_id, planned)
    cov = judged.coverage
    if cov is not None and not cov.complete:
        audit.record(ctx.redis, "blocked", repo=req.repo, pr=req.pr, sha=req.sha, unapproved=len(cov.unapproved_pairs))


def _record_runs(
    ctx: WorkerContext,
    req: PlanRequest,
    results: list[ProjectResult],
    patterns: list[str],
    gate: tuple[State, str],
    url: str | None,
    runs: dict[str, str],
) -> None:
    for r in results:
        shown = mask(r.error or "", (), patterns)[:200]  # masked whole first: a cut could split a match
        summary = summary_line(r.plan) if r.plan is not None else f"plan failed: {shown}"
        record_run(
            ctx.redis,
            kind="plan",
            repo=req.repo,
            number=req.pr,
            project=r.name,
            sha=req.sha,
            summary=summary,
            gate=gate[0],
            gate_description=gate[1],
            url=url,
            **({"run": runs[r.identity]} if r.identity in runs else {}),
        )
