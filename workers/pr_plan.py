"""Plan a pull request: dispatch one job per affected project, then publish one comment + statuses.

Flow (Atlantis's controller → project finder → runner → VCS output):
`plan_pr` (dispatch) checks out the head once to find projects, enqueues one `plan_project`
job per project (serialized per project by an RQ RateLimit) and a `publish_plan` job that
depends on all of them; `publish_plan` renders the comment and sets the combined statuses.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gidgethub.abc import GitHubAPI

from workers import audit, gate_store, vcs
from workers.approvals import coverage
from workers.checkout import checkout, job_workdir
from workers.config import ConfigError, RepoConfig, parse_config
from workers.context import WorkerContext
from workers.gate import destroy_keys
from workers.github import installation_client
from workers.plan import PlanError, parse_plan, summary_line
from workers.projects import Project, ProjectSelection, all_projects, find_projects
from workers.render import ProjectResult, render_config_error, render_fork_refused, render_plan_comments
from workers.render_replies import approval_status
from workers.render_status import destroy_status, pending_status, plan_status
from workers.repo_config import base_config
from workers.runlog import record_run
from workers.runner import Terraform, TerraformError
from workers.scan import scan

log = logging.getLogger("plangate.plan")
PLAN_CONTEXT = "plangate/plan"
DESTROY_CONTEXT = "plangate/destroy"
CHECKOUT_TIMEOUT = 600.0


@dataclass(frozen=True)
class PlanRequest:
    """Plain values from the webhook: what to plan and as whom."""

    installation_id: int
    repo_id: int
    repo: str
    clone_url: str
    default_branch: str
    pr: int
    sha: str
    author: str
    fork: bool = False
    trigger: str = "push"
    only: tuple[str, ...] = ()  # `/plan NAME ...`: plan these projects whether or not the PR changes them

    def head_key(self) -> str:
        return f"plangate:head:{self.repo_id}:{self.pr}"


def is_current(ctx: WorkerContext, req: PlanRequest) -> bool:
    """False once a newer SHA of the PR started planning: its results must not be posted."""
    head = ctx.redis.get(req.head_key())
    return head is None or head.decode() == req.sha  # type: ignore[union-attr]


async def dispatch(ctx: WorkerContext, req: PlanRequest) -> list[Project] | None:
    """Mark the SHA current, find the affected projects; None when there is nothing to plan."""
    _take_head(ctx, req)
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        if req.fork and not await _forks_allowed(gh, req):
            await _refuse_fork(ctx, gh, req)
            return None
        await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, *pending_status(0))
        changed = await vcs.changed_files(gh, req.repo, req.pr)
        token = await ctx.tokens.token(req.installation_id)
        with job_workdir(ctx.checkouts, req.repo_id, f"pr-{req.pr}", req.sha, "_discovery") as work:
            await asyncio.to_thread(checkout, req.clone_url, req.sha, work, token, timeout=CHECKOUT_TIMEOUT)
            snapshot = scan(work)
        try:
            config = parse_config(snapshot.config_text)
        except ConfigError as exc:
            await _config_failed(ctx, gh, req, exc)
            return None
        selection = find_projects(config, changed, snapshot.all_files, snapshot.module_sources)
        if req.only:
            every = all_projects(config, snapshot.all_files, snapshot.module_sources)
            selection = ProjectSelection(tuple(p for p in every if p.name in req.only))
        if not selection.projects:
            await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "success", "no Terraform project affected")
            await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, "success", "no destroys")
            return None
        _remember_selection(ctx, req, config, selection)
        return list(selection.projects)


def _take_head(ctx: WorkerContext, req: PlanRequest) -> None:
    """This SHA is now the PR's head: approvals of the previous head are void (they are per SHA)."""
    previous = ctx.redis.getset(req.head_key(), req.sha)
    ctx.redis.expire(req.head_key(), gate_store.TTL)
    if isinstance(previous, bytes) and previous.decode() != req.sha:
        # a push after a head we knew: this SHA is new, so it has no approvals yet (after a Redis
        # wipe nothing is assumed, and the approvals are rebuilt from the PR's comments instead)
        gate_store.start_sha(ctx.redis, req.repo_id, req.pr, req.sha)
        old = previous.decode()
        if gate_store.cached_approvals(ctx.redis, req.repo_id, req.pr, old):
            audit.record(ctx.redis, "voided", repo=req.repo, pr=req.pr, sha=old, new_sha=req.sha)


async def _forks_allowed(gh: GitHubAPI, req: PlanRequest) -> bool:
    """Read from the default branch: a fork must not be able to allow itself. Any doubt: no."""
    try:
        return (await base_config(gh, req.repo, req.default_branch)).allow_fork_prs
    except Exception:
        return False


async def _refuse_fork(ctx: WorkerContext, gh: GitHubAPI, req: PlanRequest) -> None:
    key = f"plangate:fork-refused:{req.repo_id}:{req.pr}"
    if ctx.redis.set(key, "1", nx=True, ex=90 * 24 * 3600):
        await vcs.post_comment(gh, req.repo, req.pr, render_fork_refused(req.pr))
    await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "failure", "fork PRs are not planned here")
    await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, "failure", "not planned: fork PR")


async def _config_failed(ctx: WorkerContext, gh: GitHubAPI, req: PlanRequest, exc: ConfigError) -> None:
    login = await _login(ctx)
    body = render_config_error(exc.key, exc.problem)
    bodies = [body]
    url = await vcs.upsert_comments(
        gh, ctx.redis, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=login, kind="plan", bodies=bodies
    )
    await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "failure", f"invalid .plangate.yml: {exc.key}", url)
    await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, "failure", "not planned: invalid .plangate.yml", url)


async def _login(ctx: WorkerContext) -> str:
    return await vcs.bot_login(ctx.redis, ctx.app_id, ctx.private_key, ctx.settings.api_url)


def _remember_selection(ctx: WorkerContext, req: PlanRequest, config: RepoConfig, sel: ProjectSelection) -> None:
    """What publish needs besides the results: mask patterns and the 3,000-file note."""
    meta = {"mask_patterns": list(config.mask_patterns), "changes_unknown": sel.changes_unknown}
    ctx.redis.set(f"plangate:plan-meta:{req.repo_id}:{req.pr}:{req.sha}", json.dumps(meta), ex=7 * 24 * 3600)


def plan_project(ctx: WorkerContext, req: PlanRequest, project: Project) -> ProjectResult:
    """Check out the SHA, init, plan, show: one project's result (errors are results, not exceptions)."""
    base = {"name": project.name, "dir": project.dir, "workspace": project.workspace, "sha": req.sha}
    tool = project.tool or "terraform"
    if not is_current(ctx, req):
        return ProjectResult(**base, tool=tool, plan=None, error="superseded by a newer push")
    try:
        terraform = ctx.terraform(project.tool)
        tool = Path(terraform.tool).name
        token = asyncio.run(ctx.tokens.token(req.installation_id))
        with job_workdir(ctx.checkouts, req.repo_id, f"pr-{req.pr}", req.sha, project.name) as work:
            checkout(req.clone_url, req.sha, work, token, timeout=CHECKOUT_TIMEOUT)
            return run_terraform(terraform, work, project, base, tool)
    except Exception as exc:  # any failure is reported on the PR, never swallowed
        log.warning(json.dumps({"repo": req.repo, "pr": req.pr, "project": project.name, "error": str(exc)}))
        return ProjectResult(**base, tool=tool, plan=None, error=f"{type(exc).__name__}: {exc}")


def run_terraform(terraform: Terraform, work: Path, project: Project, base: dict[str, Any], tool: str) -> ProjectResult:
    root = work / project.dir
    if project.workspace != "default":
        terraform = replace(terraform, env={**terraform.env, "TF_WORKSPACE": project.workspace})
    init = terraform.init(root)
    if not init.ok:
        return ProjectResult(**base, tool=tool, plan=None, error=f"{tool} init failed:\n{init.output}")
    planfile = work / "plangate.tfplan"
    plan = terraform.plan(root, planfile)
    if not plan.ok:
        return ProjectResult(**base, tool=tool, plan=None, error=f"{tool} plan failed:\n{plan.output}")
    try:
        raw, text = terraform.show_both(root, planfile)
        parsed = parse_plan(raw)
    except (TerraformError, PlanError) as exc:
        return ProjectResult(**base, tool=tool, plan=None, error=str(exc))
    return ProjectResult(**base, tool=tool, plan=parsed, plan_text=text)


async def publish(ctx: WorkerContext, req: PlanRequest, results: list[ProjectResult]) -> None:
    """One comment (edited in place) and the combined statuses, unless a newer SHA took over."""
    if not is_current(ctx, req):
        log.info(json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "outcome": "superseded"}))
        return
    raw = ctx.redis.get(f"plangate:plan-meta:{req.repo_id}:{req.pr}:{req.sha}")
    meta = json.loads(raw) if isinstance(raw, bytes) else {}
    patterns = [*ctx.settings.mask_patterns, *meta.get("mask_patterns", [])]
    note = "changes_unknown" if meta.get("changes_unknown") else ""
    bodies = render_plan_comments(results, pr=req.pr, sha=req.sha, mask_patterns=patterns, note=note)
    record = gate_store.DestroysRecord(
        destroys={r.name: list(destroy_keys(r.plan)) for r in results if r.plan is not None},
        failed=[r.name for r in results if r.plan is None],
    )
    gate_store.save_destroys(ctx.redis, req.repo_id, req.pr, req.sha, record)
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        login = await _login(ctx)
        url = await vcs.upsert_comments(
            gh, ctx.redis, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=login, kind="plan", bodies=bodies
        )
        await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, *plan_status(results), url)
        gate = await _gate_status(ctx, gh, req, results, record, login)
        await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, *gate, url)
    for r in results:
        summary = summary_line(r.plan) if r.plan is not None else f"plan failed: {(r.error or '')[:200]}"
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
        )
    log.info(json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "outcome": "published"}))


async def _gate_status(
    ctx: WorkerContext,
    gh: GitHubAPI,
    req: PlanRequest,
    results: list[ProjectResult],
    record: gate_store.DestroysRecord,
    login: str,
) -> tuple[str, str]:
    """plangate/destroy: failed plans fail; destroys pass only when approvals at this SHA cover them all."""
    state, description = destroy_status(results)
    if record.failed or not any(record.destroys.values()):
        return state, description
    approvals = await gate_store.load_approvals(
        ctx.redis, gh, repo=req.repo, repo_id=req.repo_id, number=req.pr, sha=req.sha, bot_login=login
    )
    cov = coverage(record.destroys, approvals, sha=req.sha)
    if not cov.complete:
        audit.record(ctx.redis, "blocked", repo=req.repo, pr=req.pr, sha=req.sha, unapproved=len(cov.unapproved_pairs))
    return approval_status(cov)
