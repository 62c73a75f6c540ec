"""Drift detection: scheduled plans of the default branch, reported as one issue per project.

`plangate cron` (RQ's cron scheduler) runs `tick` every minute; the per-repository schedules
come from each repository's `.plangate.yml` (or the server default), gathered by `refresh`
from the App's installations. A check plans with the same runner, env and limits as PR plans,
under the same per-project RateLimit, and never applies anything.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from core.config import ConfigError
from core.contract import PLANS_QUEUE, Jobs
from core.drift_schedule import DriftTarget, delays, due, targets_for
from core.projects import Project
from core.render.drift import (
    DRIFT_LABEL,
    drift_issue_title,
    has_drift,
    render_drift_failed,
    render_drift_report,
    render_drift_resolved,
)
from core.results import ProjectResult
from plumbing.runlog import record_run
from workers.adapters.checkout import remote_head
from workers.adapters.github import GitHub, installations, issues, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.github.client import RateLimited
from workers.adapters.github.repo_config import base_config, mask_patterns
from workers.adapters.queue import follow_ups, waiting
from workers.adapters.queue.running import current_job_id
from workers.adapters.store import drift_issues
from workers.adapters.terraform import pipeline
from workers.adapters.terraform.steps import Terraform
from workers.context import WorkerContext
from workers.flows import run_records
from workers.flows.discovery import discover_at

log = logging.getLogger("plangate.drift")


async def refresh(ctx: WorkerContext) -> list[DriftTarget]:
    """Every installed repository's drift targets, stored for the tick (one config read per repo)."""
    targets: list[DriftTarget] = []
    for installation in await installations.installation_ids(ctx.app_id, ctx.private_key, ctx.settings.api_url):
        async with installation_client(ctx.tokens, installation, ctx.settings.api_url) as gh:
            async for repo in installations.repositories(gh):
                targets += await _repo_targets(ctx, gh, installation, repo)
    drift_issues.save_targets(ctx.redis, targets)
    return targets


async def _repo_targets(
    ctx: WorkerContext, gh: GitHub, installation_id: int, repo: dict[str, object]
) -> list[DriftTarget]:
    name, branch = str(repo["full_name"]), str(repo.get("default_branch") or "main")
    try:
        config = await base_config(gh, name, branch)
    except ConfigError as exc:
        log.warning(json.dumps({"repo": name, "drift": "config invalid", "error": str(exc)}))
        return []
    return targets_for(
        config,
        installation_id=installation_id,
        repo_id=int(str(repo["id"])),
        repo=name,
        clone_url=str(repo["clone_url"]),
        default_branch=branch,
        server_default=ctx.settings.drift_schedule,
    )


def tick(ctx: WorkerContext, now: datetime) -> list[str]:
    """Enqueue the checks due this minute, each installation's spread over a window (jitter)."""
    targets = drift_issues.load_targets(ctx.redis)
    minute = now.astimezone(UTC).replace(second=0, microsecond=0)
    ids = []
    for target, delay in delays(due(targets, minute)):
        job_id = f"drift-{target.repo_id}-{_slug(target.project)}-{minute:%Y%m%d%H%M}"
        check = {"target": target}
        if waiting.schedule_once(
            ctx.redis, PLANS_QUEUE, Jobs.DRIFT_CHECK, check, job_id=job_id, delay=timedelta(seconds=delay)
        ):
            ids.append(job_id)
    return ids


def _slug(project: str | None) -> str:
    return "all" if project is None else "".join(c if c.isalnum() else "_" for c in project)


async def check(ctx: WorkerContext, target: DriftTarget) -> list[str]:
    """One repository's check: resolve the default branch head, then one job per project; their ids."""
    sha, projects = await projects_due(ctx, target)
    return follow_ups.drift_projects(ctx.redis, target, sha, projects, ctx.settings.tf_timeout)


async def projects_due(ctx: WorkerContext, target: DriftTarget) -> tuple[str, list[Project]]:
    """The default branch's head SHA and the projects to check there."""
    token = await ctx.tokens.token(target.installation_id)
    sha = await asyncio.to_thread(remote_head, target.clone_url, target.default_branch, token, timeout=60)
    every = (await discover_at(ctx.checkouts, target, "drift", sha, token, None)).every
    return sha, [p for p in every if target.project is None or p.name == target.project]


async def check_project(ctx: WorkerContext, target: DriftTarget, project: Project, sha: str) -> str:
    """Plan the project at the branch head, as a run (its page shows the output as it comes), and
    report: "drift", "clean" or "failed"."""
    job, page = current_job_id(), None
    try:
        terraform = ctx.terraform(project.tool, "drift")
        token = await ctx.tokens.token(target.installation_id)
        if ctx.settings.oidc is not None:
            async with installation_client(ctx.tokens, target.installation_id, ctx.settings.api_url) as gh:
                policy = await base_config(gh, target.repo, target.default_branch)
            grant = ctx.identity(
                policy, project, "drift", repo=target.repo, repo_id=target.repo_id, sha=sha, ref=target.default_branch
            )
            terraform = replace(terraform, oidc=grant)
        number = drift_issues.issue_of(ctx.redis, target.repo_id, project.name)
        where = None if job is None else run_records.Where("drift", job, target.repo, target.repo_id, sha, number)
        patterns = await _patterns(ctx, target) if where is not None else None
        with run_records.recorded(ctx, where, project, terraform.tool, patterns) as run:
            page = None if run is None else run.id
            tf = terraform if run is None else run.streamed(terraform)
            result, source = await asyncio.to_thread(_plan, ctx, target, project, sha, tf, token)
            if run is not None:
                run.finish(*_drift_outcome(result), result=result, source=source)
    except RateLimited:
        raise
    except Exception as exc:
        result = pipeline.failure(project, sha, f"{type(exc).__name__}: {exc}")
    return await report(ctx, target, project, result, page)


async def _patterns(ctx: WorkerContext, target: DriftTarget) -> list[str] | None:
    """The default branch's mask patterns with the server's; None when they cannot be read (the report
    says why): the run then keeps none of the output."""
    try:
        async with installation_client(ctx.tokens, target.installation_id, ctx.settings.api_url) as gh:
            return await mask_patterns(gh, target.repo, target.default_branch, ctx.settings.mask_patterns)
    except RateLimited:
        raise
    except Exception:
        return None


def _drift_outcome(result: ProjectResult) -> tuple[str, bool, str]:
    """A drift check's run: "drift" (what the plan would change), "no drift", or "plan failed"."""
    if result.plan is None:
        return "plan failed", False, result.error or "the plan failed"
    summary = run_records.plan_outcome(result)[2]
    return ("drift", False, summary) if has_drift(result.plan) else ("no drift", True, summary)


def _plan(
    ctx: WorkerContext, target: DriftTarget, project: Project, sha: str, tf: Terraform, token: str
) -> tuple[ProjectResult, bytes | None]:
    """The check's plan, and the `show -json` it was read from (its run page draws the diff from it)."""
    with pipeline.checked_out(
        ctx.checkouts, target.repo_id, "drift", sha, project.name, target.clone_url, token
    ) as dirs:
        saved = pipeline.plan(tf, project, dirs, attributes=True)
        return pipeline.result(project, sha, tf.tool, saved), saved.source


async def report(
    ctx: WorkerContext, target: DriftTarget, project: Project, result: ProjectResult, page: str | None = None
) -> str:
    """The check's issue and run-log entry (`page`: its run, if it has a page)."""
    now = datetime.now(UTC)
    async with installation_client(ctx.tokens, target.installation_id, ctx.settings.api_url) as gh:
        patterns = await mask_patterns(gh, target.repo, target.default_branch, ctx.settings.mask_patterns)
        login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
        number = await _open_issue(ctx, gh, target, project.name, login)
        if result.plan is None:
            outcome = "failed"
            body = render_drift_failed(
                project=project.name, sha=result.sha, checked_at=now, error=result.error or "", mask_patterns=patterns
            )
            number = await _post_or_open(ctx, gh, target, project, number, body, as_comment=True)
        elif has_drift(result.plan):
            outcome = "drift"
            body = render_drift_report(
                project=project.name,
                dir=project.dir,
                sha=result.sha,
                checked_at=now,
                plan=result.plan,
                plan_text=result.plan_text,
                mask_patterns=patterns,
            )
            number = await _post_or_open(ctx, gh, target, project, number, body, as_comment=False)
        else:
            outcome = "clean"
            if number is not None:
                body = render_drift_resolved(project=project.name, sha=result.sha, checked_at=now)
                await vcs.post_comment(
                    gh, ctx.records, repo=target.repo, repo_id=target.repo_id, number=number, body=body
                )
                await issues.close_issue(gh, target.repo, number)
                drift_issues.forget_issue(ctx.redis, target.repo_id, project.name, number)
    record_run(
        ctx.redis,
        kind="drift",
        repo=target.repo,
        number=number,
        project=project.name,
        sha=result.sha,
        summary=outcome,
        gate="success" if outcome == "clean" else "failure",
        result=outcome,
        **({"run": page} if page is not None else {}),
    )
    return outcome


async def _open_issue(ctx: WorkerContext, gh: GitHub, target: DriftTarget, project: str, login: str) -> int | None:
    """The open drift issue of this project: from Redis, else found by label, title and author."""
    known = drift_issues.issue_of(ctx.redis, target.repo_id, project)
    if known is not None:
        return known
    title = drift_issue_title(project)
    async for issue in issues.open_issues_labelled(gh, target.repo, DRIFT_LABEL):
        if issue["title"] == title and issue["user"]["login"] == login:
            drift_issues.remember_issue(ctx.redis, target.repo_id, project, int(issue["number"]))
            return int(issue["number"])
    return None


async def _post_or_open(
    ctx: WorkerContext,
    gh: GitHub,
    target: DriftTarget,
    project: Project,
    number: int | None,
    body: str,
    *,
    as_comment: bool,
) -> int:
    """Drift edits the issue in place; a failed check is a comment on it (or opens it)."""
    if number is None:
        title = drift_issue_title(project.name)
        issue = await vcs.open_issue(
            gh, ctx.records, repo=target.repo, repo_id=target.repo_id, title=title, body=body, labels=[DRIFT_LABEL]
        )
        number = int(issue["number"])
        drift_issues.remember_issue(ctx.redis, target.repo_id, project.name, number)
    elif as_comment:
        await vcs.post_comment(gh, ctx.records, repo=target.repo, repo_id=target.repo_id, number=number, body=body)
    else:
        await vcs.edit_issue(
            gh, ctx.records, repo=target.repo, repo_id=target.repo_id, number=number, data={"body": body}
        )
    drift_issues.watch(ctx.redis, target, project, number)
    return number
