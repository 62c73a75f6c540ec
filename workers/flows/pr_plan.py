"""A PR's plan steps: find the affected projects (`dispatch`), plan one (`plan_project`), plan the only
one and publish it (`plan_and_publish`, with pr_publish.py). Which step runs in which job, and when:
pr_runner.py."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from core import redis_keys
from core.apply_order import order_line
from core.config import ConfigError, RepoConfig
from core.contract import DESTROY_CONTEXT, PLAN_CONTEXT, PlanRequest
from core.project_limit import over_limit
from core.project_order import merge_waits, with_dependents
from core.projects import Project, ProjectSelection
from core.render.plan import render_config_error, render_fork_refused, render_too_many_projects
from core.render.status import pending_status
from core.results import ProjectResult
from workers.adapters.github import GitHub, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.authors import record_pusher
from workers.adapters.github.client import RateLimited
from workers.adapters.github.pulls import get_pull
from workers.adapters.github.repo_config import base_config, base_config_or_none
from workers.adapters.store import audit, pr_heads, pr_plans
from workers.adapters.store import gates as gate_store
from workers.adapters.terraform import pipeline
from workers.adapters.terraform.oidc_tokens import Grant
from workers.adapters.terraform.sandbox import SandboxError
from workers.context import WorkerContext
from workers.flows import carry, commit_tree, run_records
from workers.flows.discovery import Discovered, discover, to_plan
from workers.flows.gate_check import at_commit
from workers.flows.pr_publish import bot_login, is_current, meta_key, publish

log = logging.getLogger("plangate.plan")
MERGEABILITY_WAITS = (1.0, 2.0, 4.0, 8.0, 15.0)  # seconds between asks while GitHub makes a test merge


@dataclass(frozen=True)
class PlansToMake:
    """What a PR's dispatch decided: the request as planned, the projects to plan, those carried forward."""

    request: PlanRequest
    projects: list[Project]
    carried: list[carry.Carried]


async def dispatch(ctx: WorkerContext, req: PlanRequest) -> PlansToMake | None:
    """Mark the SHA current, find the affected projects and which of them changed since the PR's last
    plan; None when there is nothing to plan."""
    if req.plans_test_merge:
        pr_plans.release(ctx.redis, req.repo_id, req.pr)
        if not is_current(ctx, req):
            return None  # a newer push of the PR is planned anyway
    token = await ctx.tokens.token(req.installation_id)
    async with contextlib.AsyncExitStack() as stack:
        # The fetch is on the PR's path: git starts first unless a fork or a test merge must be looked at.
        early = None
        if not (req.plans_test_merge or req.fork):
            early = await stack.enter_async_context(_fetched(ctx, req, req.sha, token))
        _take_head(ctx, req)
        gh = await stack.enter_async_context(installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url))
        if req.plans_test_merge:
            merge = await _test_merge(gh, req)
            if merge is None:
                return None
            req = replace(req, code_sha=merge)
        known = await base_config_or_none(gh, req.repo, req.default_branch) if req.fork else None
        if req.fork and not (known is not None and known.allow_fork_prs):  # its code is not even fetched
            await _refuse_fork(ctx, gh, req)
            return None
        code = req.code_sha or req.sha
        files = early if early is not None else await stack.enter_async_context(_fetched(ctx, req, code, token))
        try:
            learn = functools.partial(_learn_comments, ctx, gh, req)
            policy, changed = await _while_fetching(files, gh, req, known, learn)
            found = discover(files.result(), changed, req.only)
            affected = {p.identity for p in found.selection.projects}
            found = _with_dependents(policy, found)
            inputs = await asyncio.to_thread(carry.fingerprints, ctx, req, files.result(), found)
        except ConfigError as exc:
            await _config_failed(ctx, gh, req, exc)
            return None
        projects = await to_plan(ctx.checkouts, req, token, found, changed, scope=f"pr-{req.pr}", base=req.base_sha)
        too_many = over_limit(len(projects), ctx.settings.max_projects, policy)
        if too_many is not None:
            await _refused(ctx, gh, req, render_too_many_projects(too_many), too_many.status, too_many.status)
            return None
        if not projects:
            await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "success", "no Terraform project affected")
            gate = at_commit(ctx.records, req.repo_id, req.sha, req.pr, ("success", "no destroys"))
            await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, *gate)
            return None
    masks = policy.mask_patterns
    order = _order(policy, [p for p in projects if p.identity in affected or p.destroy_from])
    _remember_selection(ctx, req, masks, found.selection, inputs, order)
    fresh, kept = carry.split(ctx, req, projects, inputs)
    if kept:
        log.info(
            json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "planned": len(fresh), "carried": len(kept)})
        )
    return PlansToMake(req, fresh, kept)


@contextlib.asynccontextmanager
async def _fetched(ctx: WorkerContext, req: PlanRequest, code: str, token: str) -> AsyncIterator[asyncio.Future[Path]]:
    """Commit `code`'s files, fetched by git in a thread while the block goes on, and kept until it
    ends; leaving the block (a failure included) waits for git first, so its directory never goes
    from under it."""
    with contextlib.ExitStack() as held:
        fetch = functools.partial(commit_tree.for_discovery, ctx, req, code, token, held)
        files = asyncio.get_running_loop().run_in_executor(None, fetch)  # started now, not at the next await
        try:
            yield files
        finally:
            await asyncio.gather(files, return_exceptions=True)


async def _while_fetching(
    fetch: asyncio.Future[Path],
    gh: GitHub,
    req: PlanRequest,
    known: RepoConfig | None,
    learn: Callable[[], Awaitable[None]],
) -> tuple[RepoConfig, list[str] | None]:
    """While git fetches the code, read the default branch's config (unless `known`), set
    `plangate/plan` pending, read the changed files and run `learn`, all at once: none needs another's
    answer, so the PR waits one GitHub round trip instead of four. The config and the changed files,
    once all are done and git too."""
    config = base_config(gh, req.repo, req.default_branch) if known is None else _ready(known)
    pending = vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, *pending_status(0))
    policy, _, changed, _ = await vcs.at_once(config, pending, vcs.changed_files(gh, req.repo, req.pr), learn())
    await fetch  # its own failure, if any
    return policy, changed


async def _ready(value: RepoConfig) -> RepoConfig:
    return value


async def _test_merge(gh: GitHub, req: PlanRequest) -> str | None:
    """GitHub's test merge of the PR's head with its base branch as it is now; None when the PR was
    closed, moved on to another head, or does not merge cleanly (nothing to plan then). Right after
    the base moved GitHub answers `mergeable: null` while it makes the new test merge (and may still
    name the old one): asked again, as its docs say, for up to ~30 s."""
    pull = await get_pull(gh, req.repo, req.pr)
    for wait in MERGEABILITY_WAITS:
        if pull.get("mergeable") is not None:
            break
        await asyncio.sleep(wait)
        pull = await get_pull(gh, req.repo, req.pr)
    if pull.get("state") != "open" or pull["head"]["sha"] != req.sha:
        return None
    merge = pull.get("merge_commit_sha")
    base = (pull.get("base") or {}).get("sha")
    if not merge or pull.get("mergeable") is not True:
        log.info(json.dumps({"repo": req.repo, "pr": req.pr, "replan_on_merge": "no clean test merge", "base": base}))
        return None
    return str(merge)


async def _learn_comments(ctx: WorkerContext, gh: GitHub, req: PlanRequest) -> None:
    """The PR's plan comment ids, found now so that publishing, on the PR's path, skips the lookup."""
    await vcs.learn_comments(
        gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=await bot_login(ctx), kind="plan"
    )


def _take_head(ctx: WorkerContext, req: PlanRequest) -> None:
    """This SHA is now the PR's head: approvals of the previous head are void (they are per SHA), and
    whoever pushed it is one of the PR's authors from now on."""
    if req.pusher:
        record_pusher(ctx.records, req.repo_id, req.pr, req.pusher)
    old = pr_heads.take(ctx.redis, req.repo_id, req.pr, req.sha)
    if old is not None and old != req.sha:
        # a push after a head we knew: this SHA is new, so it has no approvals yet (after a Redis
        # wipe nothing is assumed, and the approvals are rebuilt from the PR's comments instead)
        gate_store.start_sha(ctx.records, req.repo_id, req.pr, req.sha)
        if gate_store.had_approvals(ctx.records, req.repo_id, req.pr, old):
            audit.record(ctx.redis, "voided", repo=req.repo, pr=req.pr, sha=old, new_sha=req.sha)


async def _refuse_fork(ctx: WorkerContext, gh: GitHub, req: PlanRequest) -> None:
    if pr_heads.first_fork_refusal(ctx.redis, req.repo_id, req.pr):
        body = render_fork_refused(req.pr)
        await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.pr, body=body)
    await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "failure", "fork PRs are not planned here")
    gate = at_commit(ctx.records, req.repo_id, req.sha, req.pr, ("failure", "not planned: fork PR"))
    await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, *gate)


async def _config_failed(ctx: WorkerContext, gh: GitHub, req: PlanRequest, exc: ConfigError) -> None:
    body = render_config_error(exc.key, exc.problem)
    await _refused(ctx, gh, req, body, f"invalid .plangate.yml: {exc.key}", "invalid .plangate.yml")


async def _refused(ctx: WorkerContext, gh: GitHub, req: PlanRequest, body: str, plan: str, gate: str) -> None:
    """Nothing of the PR is planned: its plan comment says why (`body`), `plangate/plan` fails with the
    description `plan`, and `plangate/destroy` (as the commit's other PRs allow) with "not planned: `gate`"."""
    login = await bot_login(ctx)
    url = (
        await vcs.upsert_comments(
            gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=login, kind="plan", bodies=[body]
        )
    ).url
    await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "failure", plan, url)
    verdict = at_commit(ctx.records, req.repo_id, req.sha, req.pr, ("failure", f"not planned: {gate}"))
    await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, *verdict, url)


def _with_dependents(policy: RepoConfig, found: Discovered) -> Discovered:
    """`plan_dependents: true` (default branch): the change's projects and every project depending on one."""
    chosen = with_dependents(policy, found.every, found.selection.projects)
    return replace(found, selection=replace(found.selection, projects=tuple(chosen)))


def _order(policy: RepoConfig, projects: list[Project]) -> str | None:
    """The order a merge of these projects would apply them in (the policy's `depends_on`), as the plan
    comment says it; a loop (a deleted project's old order against the policy's) is said as such."""
    try:
        return order_line(merge_waits(policy, projects))
    except ValueError as exc:
        return f"none: {exc}, nothing would be applied"


def _remember_selection(
    ctx: WorkerContext,
    req: PlanRequest,
    masks: tuple[str, ...],
    sel: ProjectSelection,
    inputs: dict[str, str],
    order: str | None,
) -> None:
    """What publish needs besides the results: the default branch's mask patterns, the 3,000-file note,
    the fingerprints of the projects' inputs (for the next push to compare), the order a merge applies
    them in."""
    meta = {"mask_patterns": list(masks), "changes_unknown": sel.changes_unknown, "inputs": inputs, "order": order}
    ctx.records.set(meta_key(req), json.dumps(meta), ex=redis_keys.PLAN_META_TTL)


async def plan_project(ctx: WorkerContext, req: PlanRequest, project: Project) -> ProjectResult:
    """Check out the SHA and run the project's pipeline, recorded as a run (its page shows its output as
    it comes): errors are results, not exceptions."""
    if not is_current(ctx, req):
        return pipeline.failure(project, req.sha, "superseded by a newer push")
    try:
        token = await ctx.tokens.token(req.installation_id)
        scope, code = f"pr-{req.pr}", project.destroy_from or req.code_sha or req.sha
        terraform = replace(ctx.terraform(project.tool, "plan"), oidc=await _identity(ctx, req, project, code))
        where, masks = run_records.of_plan(req, project), run_records.plan_masks(ctx, req)
        with run_records.recorded(ctx, where, project, terraform.tool, masks, "plan failed") as run:
            if run is not None:
                terraform = run.streamed(terraform)
            planned = await asyncio.to_thread(commit_tree.plan, ctx, req, project, terraform, scope, code, token)
            result = pipeline.result(project, req.sha, terraform.tool, planned)
            if run is not None:
                run.finish(*run_records.plan_outcome(result), result=result, source=planned.source)
            return result
    except RateLimited:
        raise  # RQ runs the job again once GitHub allows (workers.jobs.reschedulable)
    except Exception as exc:  # any failure is reported on the PR, never swallowed
        log.warning(json.dumps({"repo": req.repo, "pr": req.pr, "project": project.name, "error": str(exc)}))
        return pipeline.failure(
            project, req.sha, f"{type(exc).__name__}: {exc}", plangate_fault=isinstance(exc, SandboxError)
        )


async def _identity(ctx: WorkerContext, req: PlanRequest, project: Project, code: str) -> Grant | None:
    """The project's plan-phase OIDC identity, as the default branch names it (never the PR's own file)."""
    if ctx.settings.oidc is None:
        return None
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        policy = await base_config(gh, req.repo, req.default_branch)
    return ctx.identity(policy, project, "plan", repo=req.repo, repo_id=req.repo_id, sha=code, pr=req.pr)


async def plan_and_publish(
    ctx: WorkerContext,
    req: PlanRequest,
    project: Project,
    job_id: str,
    carried: Sequence[ProjectResult] = (),
    carried_made: Mapping[str, tuple[str, str]] | None = None,
) -> ProjectResult:
    """The PR's only project to plan: plan it, then publish it as the plan of job `job_id` (the
    caller's), with the plans `carried` forward from earlier SHAs (`carried_made`: who made them, when)."""
    result = await plan_project(ctx, req, project)
    await publish(ctx, req, [result, *carried], {result.identity: (job_id, req.sha), **(carried_made or {})})
    return result
