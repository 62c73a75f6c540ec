"""Plan a pull request: dispatch one job per affected project, then publish one comment + statuses.

Flow (Atlantis's controller → project finder → runner → VCS output):
`plan_pr` (dispatch) checks out the head once to find projects, enqueues one `plan_project`
job per project (serialized per project by an RQ RateLimit) and a `publish_plan` job that
depends on all of them; `publish_plan` renders the comment and sets the combined statuses.
A PR with a single project to plan (and none carried) is planned and published by its dispatch job
when the project's RateLimit slot is free (workers/slots.py), else by one `plan_and_publish` job.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gidgethub.abc import GitHubAPI

from core import keys
from core.config import ConfigError, RepoConfig
from core.contract import DESTROY_CONTEXT, PLAN_CONTEXT, PlanRequest
from core.gate import destroy_keys
from core.plan import summary_line
from core.projects import Project, ProjectSelection
from core.render.mask import mask
from core.render.plan import (
    render_config_error,
    render_fork_refused,
    render_plan_comments,
    render_planned_on_merge,
    render_too_many_files,
)
from core.render.replies import approval_status
from core.render.status import State, destroy_status, pending_status, plan_status
from core.results import ProjectResult
from core.runlog import record_run
from workers.adapters.github import vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.client import RateLimited
from workers.adapters.github.repo_config import base_config, base_config_or_none, mask_patterns
from workers.adapters.store import audit
from workers.adapters.store import gates as gate_store
from workers.adapters.terraform import pipeline
from workers.adapters.terraform.sandbox import SandboxError
from workers.context import WorkerContext
from workers.flows import carry, gate_check, stale_plans
from workers.flows import code as plan_code
from workers.flows.discovery import discover, to_plan
from workers.flows.stale_plans import PlannedPR

log = logging.getLogger("plangate.plan")


def is_current(ctx: WorkerContext, req: PlanRequest) -> bool:
    """False once a newer SHA of the PR started planning: its results must not be posted."""
    head = ctx.redis.get(req.head_key())
    return head is None or head.decode() == req.sha  # type: ignore[union-attr]


@dataclass(frozen=True)
class Dispatch:
    """What a PR's dispatch decided: the request as planned, the projects to plan, those carried forward."""

    request: PlanRequest
    projects: list[Project]
    carried: list[carry.Carried]


async def dispatch(ctx: WorkerContext, req: PlanRequest) -> Dispatch | None:
    """Mark the SHA current, find the affected projects and which of them changed since the PR's last
    plan; None when there is nothing to plan."""
    if req.on_merge:
        stale_plans.release(ctx.redis, req.repo_id, req.pr)
        if not is_current(ctx, req):
            return None  # a newer push of the PR is planned anyway
    token = await ctx.tokens.token(req.installation_id)
    async with contextlib.AsyncExitStack() as stack:
        # The fetch is on the PR's path: git starts first unless a fork or a test merge must be looked at.
        early = None
        if not (req.on_merge or req.fork):
            early = await stack.enter_async_context(_fetched(ctx, req, req.sha, token))
        _take_head(ctx, req)
        gh = await stack.enter_async_context(installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url))
        if req.on_merge:
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
            inputs = await asyncio.to_thread(carry.fingerprints, ctx, req, files.result(), found)
        except ConfigError as exc:
            await _config_failed(ctx, gh, req, exc)
            return None
        projects = await to_plan(ctx.checkouts, req, token, found, changed, scope=f"pr-{req.pr}", base=req.base_sha)
        if not projects:
            await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "success", "no Terraform project affected")
            await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, "success", "no destroys")
            return None
    masks = policy.mask_patterns
    _remember_selection(ctx, req, masks, found.selection, inputs)
    fresh, kept = carry.split(ctx, req, projects, inputs)
    if kept:
        log.info(
            json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "planned": len(fresh), "carried": len(kept)})
        )
    return Dispatch(req, fresh, kept)


@contextlib.asynccontextmanager
async def _fetched(ctx: WorkerContext, req: PlanRequest, code: str, token: str) -> AsyncIterator[asyncio.Future[Path]]:
    """Commit `code`'s files, fetched by git in a thread while the block goes on, and kept until it
    ends; leaving the block (a failure included) waits for git first, so its directory never goes
    from under it."""
    with contextlib.ExitStack() as held:
        fetch = functools.partial(plan_code.for_discovery, ctx, req, code, token, held)
        files = asyncio.get_running_loop().run_in_executor(None, fetch)  # started now, not at the next await
        try:
            yield files
        finally:
            await asyncio.gather(files, return_exceptions=True)


async def _while_fetching(
    fetch: asyncio.Future[Path],
    gh: GitHubAPI,
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
    policy, _, changed, _ = await _together(config, pending, vcs.changed_files(gh, req.repo, req.pr), learn())
    await fetch  # its own failure, if any
    return policy, changed


async def _ready(value: RepoConfig) -> RepoConfig:
    return value


async def _together(*calls: Awaitable[Any]) -> list[Any]:
    """The answers of `calls`, made at once; once all have ended, the first failure (in order) is raised,
    so none is still running when the caller's client closes."""
    done = await asyncio.gather(*calls, return_exceptions=True)
    for answer in done:
        if isinstance(answer, BaseException):
            raise answer
    return done


async def _test_merge(gh: GitHubAPI, req: PlanRequest) -> str | None:
    """GitHub's test merge of the PR's head with its base branch as it is now; None when the PR was
    closed, moved on to another head, or does not merge cleanly (nothing to plan then)."""
    pull = await gh.getitem(f"/repos/{req.repo}/pulls/{req.pr}")
    if pull.get("state") != "open" or pull["head"]["sha"] != req.sha:
        return None
    merge = pull.get("merge_commit_sha")
    base = (pull.get("base") or {}).get("sha")
    if not merge or pull.get("mergeable") is False:
        log.info(json.dumps({"repo": req.repo, "pr": req.pr, "replan_on_merge": "no clean test merge", "base": base}))
        return None
    return str(merge)


async def _learn_comments(ctx: WorkerContext, gh: GitHubAPI, req: PlanRequest) -> None:
    """The PR's plan comment ids, found now so that publishing, on the PR's path, skips the lookup."""
    await vcs.learn_comments(
        gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=await _login(ctx), kind="plan"
    )


def _take_head(ctx: WorkerContext, req: PlanRequest) -> None:
    """This SHA is now the PR's head: approvals of the previous head are void (they are per SHA)."""
    previous = ctx.redis.getset(req.head_key(), req.sha)
    ctx.redis.expire(req.head_key(), gate_store.TTL)
    if isinstance(previous, bytes) and previous.decode() != req.sha:
        # a push after a head we knew: this SHA is new, so it has no approvals yet (after a Redis
        # wipe nothing is assumed, and the approvals are rebuilt from the PR's comments instead)
        gate_store.start_sha(ctx.records, req.repo_id, req.pr, req.sha)
        old = previous.decode()
        if gate_store.cached_approvals(ctx.records, req.repo_id, req.pr, old):
            audit.record(ctx.redis, "voided", repo=req.repo, pr=req.pr, sha=old, new_sha=req.sha)


async def _refuse_fork(ctx: WorkerContext, gh: GitHubAPI, req: PlanRequest) -> None:
    key = keys.fork_refused(req.repo_id, req.pr)
    if ctx.redis.set(key, "1", nx=True, ex=keys.FORK_REFUSED_TTL):
        await vcs.post_comment(gh, req.repo, req.pr, render_fork_refused(req.pr))
    await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "failure", "fork PRs are not planned here")
    await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, "failure", "not planned: fork PR")


async def _config_failed(ctx: WorkerContext, gh: GitHubAPI, req: PlanRequest, exc: ConfigError) -> None:
    login = await _login(ctx)
    body = render_config_error(exc.key, exc.problem)
    bodies = [body]
    url = (
        await vcs.upsert_comments(
            gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=login, kind="plan", bodies=bodies
        )
    ).url
    await vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, "failure", f"invalid .plangate.yml: {exc.key}", url)
    await vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, "failure", "not planned: invalid .plangate.yml", url)


async def _login(ctx: WorkerContext) -> str:
    return await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)


def _meta_key(req: PlanRequest) -> str:
    return keys.plan_meta(req.repo_id, req.pr, req.sha)


def _remember_selection(
    ctx: WorkerContext, req: PlanRequest, masks: tuple[str, ...], sel: ProjectSelection, inputs: dict[str, str]
) -> None:
    """What publish needs besides the results: the default branch's mask patterns, the 3,000-file note,
    the fingerprints of the projects' inputs (for the next push to compare)."""
    meta = {"mask_patterns": list(masks), "changes_unknown": sel.changes_unknown, "inputs": inputs}
    ctx.records.set(_meta_key(req), json.dumps(meta), ex=keys.PLAN_META_TTL)


async def plan_project(ctx: WorkerContext, req: PlanRequest, project: Project) -> ProjectResult:
    """Check out the SHA and run the project's pipeline: errors are results, not exceptions."""
    if not is_current(ctx, req):
        return pipeline.failure(project, req.sha, "superseded by a newer push")
    try:
        terraform = ctx.terraform(project.tool, "plan")
        token = await ctx.tokens.token(req.installation_id)
        scope, code = f"pr-{req.pr}", project.destroy_from or req.code_sha or req.sha
        planned = await asyncio.to_thread(plan_code.plan, ctx, req, project, terraform, scope, code, token)
        return pipeline.result(project, req.sha, terraform.tool, planned)
    except RateLimited:
        raise  # RQ runs the job again once GitHub allows (workers.jobs.reschedulable)
    except Exception as exc:  # any failure is reported on the PR, never swallowed
        log.warning(json.dumps({"repo": req.repo, "pr": req.pr, "project": project.name, "error": str(exc)}))
        return pipeline.failure(project, req.sha, f"{type(exc).__name__}: {exc}", ours=isinstance(exc, SandboxError))


async def plan_and_publish(ctx: WorkerContext, req: PlanRequest, project: Project, job_id: str) -> ProjectResult:
    """The PR's only project: plan it, then publish it as the plan of job `job_id` (the caller's)."""
    result = await plan_project(ctx, req, project)
    await publish(ctx, req, [result], {result.identity: (job_id, req.sha)})
    return result


async def _comment_and_reports(
    comment: Awaitable[vcs.Published], report: Callable[[str | None], Awaitable[object]], shown: str | None
) -> vcs.Published:
    """The plan comment, and the reports that link to it: at once when the comment's URL is `shown`
    already (an edit keeps it), else once GitHub answers the new comment with its URL."""
    if shown is None:
        posted = await comment
        await report(posted.url)
        return posted
    edited: vcs.Published = (await _together(comment, report(shown)))[0]
    if edited.url != shown:  # the comment was deleted meanwhile and posted anew
        await report(edited.url)
    return edited


async def _report(
    gh: GitHubAPI,
    req: PlanRequest,
    plan: tuple[State, str],
    gate: tuple[State, str],
    text: str,
    waiting: bool,
    url: str | None,
) -> None:
    await _together(  # two contexts, each complete in itself: one round trip, not two
        vcs.set_status(gh, req.repo, req.sha, PLAN_CONTEXT, *plan, url, summary=text),
        vcs.set_status(gh, req.repo, req.sha, DESTROY_CONTEXT, *gate, url, summary=text, approve=waiting),
    )


async def publish(
    ctx: WorkerContext, req: PlanRequest, results: list[ProjectResult], made: dict[str, tuple[str, str]] | None = None
) -> None:
    """One comment (edited in place) and the combined statuses, unless a newer SHA took over. `made`:
    identity → (job id, SHA planned at) of each plan, for the next push to carry forward."""
    if not is_current(ctx, req):
        log.info(json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "outcome": "superseded"}))
        return
    found = ctx.records.get_json(_meta_key(req))
    meta = found if isinstance(found, dict) else {}
    notes = [render_too_many_files(vcs.MAX_PR_FILES)] if meta.get("changes_unknown") else []
    if req.code_sha:
        notes.append(render_planned_on_merge(req.sha, req.code_sha, req.default_branch))
    note = "\n\n".join(notes)
    destroys = {r.identity: list(destroy_keys(r.plan)) for r in results if r.plan is not None}
    failed = [r.identity for r in results if r.plan is None]
    async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
        if "mask_patterns" in meta:
            patterns = [*ctx.settings.mask_patterns, *meta["mask_patterns"]]
        else:  # the dispatch's record is gone (Redis lost it, or the key that seals it changed): ask again
            patterns = await mask_patterns(gh, req.repo, req.default_branch, ctx.settings.mask_patterns)
        login = await _login(ctx)
        cov = None
        if not failed and any(destroys.values()):
            cov = await gate_check.coverage_at(
                ctx.records,
                gh,
                repo=req.repo,
                repo_id=req.repo_id,
                number=req.pr,
                sha=req.sha,
                destroys=destroys,
                bot_login=login,
                default_branch=req.default_branch,
            )
        notes_by_destroy = cov.notes if cov is not None else None
        bodies = render_plan_comments(
            results, pr=req.pr, sha=req.sha, mask_patterns=patterns, note=note, notes=notes_by_destroy
        )
        text = bodies[0].partition("\n")[2]  # the plan comment's first part, without its marker
        gate = destroy_status(results) if cov is None else approval_status(cov)
        waiting = cov is not None and not cov.complete and not cov.never

        async def commented() -> vcs.Published:
            published = await vcs.upsert_comments(
                gh,
                ctx.records,
                repo=req.repo,
                repo_id=req.repo_id,
                number=req.pr,
                login=login,
                kind="plan",
                bodies=bodies,
            )
            # Saved once the comment shows it: an approval is measured against when its author could see it.
            record = gate_store.DestroysRecord(destroys=destroys, failed=failed, published_at=published.at)
            gate_store.save_destroys(ctx.records, req.repo_id, req.pr, req.sha, record)
            return published

        reports = functools.partial(_report, gh, req, plan_status(results), gate, text, waiting)
        published = await _comment_and_reports(
            commented(), reports, vcs.known_url(ctx.records, req.repo_id, req.pr, "plan")
        )
        url = published.url
        if made is not None:
            ok = {r.identity for r in results if r.plan is not None}
            carry.remember(ctx, req, meta.get("inputs", {}), {i: m for i, m in made.items() if i in ok})
        planned = PlannedPR(req.pr, req.sha, req.author, req.fork, [r.identity for r in results])
        stale_plans.remember(ctx.records, req.repo_id, planned)
        if cov is not None and not cov.complete:
            audit.record(
                ctx.redis, "blocked", repo=req.repo, pr=req.pr, sha=req.sha, unapproved=len(cov.unapproved_pairs)
            )
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
        )
    log.info(json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "outcome": "published"}))
