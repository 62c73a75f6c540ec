"""A failed apply on the apply branch stays in sight until an apply of the project succeeds.

Called once a push's (or a re-run's) applies have all ended (workers.flows.push_apply.finish): a
project whose apply failed, died or was lost opens its one issue (or rewrites it for the new SHA), one
applied (or found with nothing left to change) closes it; open PRs of the project show a banner
meanwhile. `plangate/apply` of any later push stays red while a project it did not apply is recorded
failed. A drift issue's `/apply` that succeeds asks for the drift check that closes it when clean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from core.apply_outcome import ApplyOutcome
from core.contract import ApplyConversation, PushRequest
from core.drift_schedule import DriftTarget
from core.projects import Project
from core.render.apply_status import apply_status, still_failed_status
from core.render.failed_apply import (
    FAILED_ENDINGS,
    FAILED_LABEL,
    RESOLVING_ENDINGS,
    Failure,
    banner,
    banner_line,
    failed_issue_title,
    failed_title_prefix,
    render_failed_again,
    render_failed_issue,
    render_failed_resolved,
    with_banner,
)
from core.render.status import State
from workers.adapters.github import GitHub, comments, commits, issues, vcs
from workers.adapters.github.authors import Authors, of_pull, of_push, record_unapplied
from workers.adapters.github.pulls import get_pull
from workers.adapters.queue import follow_ups
from workers.adapters.store import audit, drift_issues, failed_applies, pr_plans, written
from workers.adapters.store.failed_applies import FailedApply
from workers.context import WorkerContext


async def after_apply(
    ctx: WorkerContext,
    gh: GitHub,
    req: PushRequest,
    where: ApplyConversation,
    ran: Sequence[Project],
    known: Mapping[str, ApplyOutcome],
    details: Mapping[str, str],
) -> tuple[State, str]:
    """Each project of `ran` (its outcome in `known`, a failure's output in `details`) opens, rewrites or
    closes its failure issue; `plangate/apply` for the SHA, red too for projects it left failed."""
    older: set[str] = set()  # projects whose failure is at a newer commit than this one: still failed
    for project in ran:
        outcome = known.get(project.name)
        if outcome is None:
            continue
        if outcome.ending in FAILED_ENDINGS:
            failure = Failure(
                project.name, project.dir, req.after, _branch(req), outcome.ending, details.get(project.name, "")
            )
            await _failed(ctx, gh, req, where, project, failure)
        elif outcome.ending in RESOLVING_ENDINGS:
            if not await _resolved(ctx, gh, req, project):
                older.add(project.name)
            _recheck_drift(ctx, req, where, project)
    return apply_status(known, still_failed(ctx, req.repo_id, set(known) - older))


def still_failed(ctx: WorkerContext, repo_id: int, applied: set[str]) -> list[tuple[str, int]]:
    """(project, issue) of each project recorded failed that is not among `applied` (names)."""
    return [
        (f.project.name, f.number) for f in failed_applies.of_repo(ctx.redis, repo_id) if f.project.name not in applied
    ]


def no_project_status(ctx: WorkerContext, repo_id: int) -> tuple[State, str]:
    """`plangate/apply` of a push that changes no project."""
    still = still_failed(ctx, repo_id, set())
    return still_failed_status(still) if still else ("success", "no Terraform project affected")


def banner_for(ctx: WorkerContext, repo_id: int, identities: set[str]) -> str:
    """The block a plan comment covering `identities` starts with: one line per project recorded failed."""
    found = [f for f in failed_applies.of_repo(ctx.redis, repo_id) if f.project.identity in identities]
    return banner([banner_line(f.project.name, f.branch, f.number) for f in found])


def _branch(req: PushRequest) -> str:
    return req.branch or req.default_branch


async def _failed(
    ctx: WorkerContext, gh: GitHub, req: PushRequest, where: ApplyConversation, project: Project, failure: Failure
) -> None:
    known = failed_applies.of_project(ctx.redis, req.repo_id, project.identity)
    number = known.number if known is not None else await _find_issue(ctx, gh, req.repo, project.name)
    title = failed_issue_title(project.name, req.after)
    body = render_failed_issue(failure, ctx.settings.mask_patterns)
    if number is None:
        opened = await vcs.open_issue(
            gh, ctx.records, repo=req.repo, repo_id=req.repo_id, title=title, body=body, labels=[FAILED_LABEL]
        )
        number = int(opened["number"])
    else:
        data = {"title": title, "body": body, "state": "open"}
        await vcs.edit_issue(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=number, data=data)
        again = render_failed_again(project.name, req.after)
        await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=number, body=again)
    own = await _authors(ctx, gh, req, where)
    record_unapplied(ctx.records, req.repo_id, project.identity, own)  # until an apply of it succeeds
    earlier = known.authors if known is not None else ()
    authors = tuple(dict.fromkeys([*earlier, *own.logins]))
    url = f"{req.clone_url.removesuffix('.git')}/issues/{number}"
    found = FailedApply(project, req.after, number, _branch(req), authors, req.repo, url)
    failed_applies.record(ctx.redis, req.repo_id, found)
    audit.record(ctx.redis, "apply-failed-issue", repo=req.repo, sha=req.after, project=project.name, number=number)
    if known is None or known.number != number:
        await _rebanner(ctx, gh, req, project)


async def _authors(ctx: WorkerContext, gh: GitHub, req: PushRequest, where: ApplyConversation) -> Authors:
    """Who made the change that failed: a merged PR's authors as GitHub shows them (opener, pushers,
    committers), a direct push's pusher and committers. None of them may approve the apply that fixes it."""
    if not where.is_pr or where.number is None:
        return of_push([*req.authors, *where.authors])
    pull = await get_pull(gh, req.repo, where.number)
    return await of_pull(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, pull=pull)


async def _find_issue(ctx: WorkerContext, gh: GitHub, repo: str, project: str) -> int | None:
    """The project's open failure issue a Redis that lost its record no longer names: plangate's own,
    by label and title."""
    login = await vcs.bot_login(ctx.records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
    prefix = failed_title_prefix(project)
    async for issue in issues.open_issues_labelled(gh, repo, FAILED_LABEL):
        if str(issue["title"]).startswith(prefix) and issue["user"]["login"] == login:
            return int(issue["number"])
    return None


async def _resolved(ctx: WorkerContext, gh: GitHub, req: PushRequest, project: Project) -> bool:
    """The project's failure closed by this apply; False when it failed at a newer commit than this one
    (an apply that waited its turn, an `/apply` that read the head before a push): that change is still
    not applied, so its issue, its red and its record stay."""
    known = failed_applies.of_project(ctx.redis, req.repo_id, project.identity)
    if known is None:
        return True
    if known.sha != req.after and (await commits.compare(gh, req.repo, known.sha, req.after)).get("status") == "behind":
        return False
    body = render_failed_resolved(project.name, req.after, _branch(req))
    await vcs.post_comment(gh, ctx.records, repo=req.repo, repo_id=req.repo_id, number=known.number, body=body)
    await issues.close_issue(gh, req.repo, known.number)
    failed_applies.clear(ctx.redis, req.repo_id, project.identity)
    audit.record(ctx.redis, "apply-failed-resolved", repo=req.repo, sha=req.after, project=project.name)
    await _rebanner(ctx, gh, req, project)
    return True


async def _rebanner(ctx: WorkerContext, gh: GitHub, req: PushRequest, project: Project) -> None:
    """Open PRs whose latest plan covers the project: their plan comment starts with the banner of the
    projects it covers that are recorded failed now (none: the banner goes)."""
    for planned in pr_plans.affected(ctx.records, req.repo_id, {project.identity}, None):
        comment_id = vcs.known_comment(ctx.records, req.repo_id, planned.number, "plan")
        if comment_id is None:
            continue
        was = written.lookup(ctx.records, req.repo_id, comment_id)
        if was is not None:
            body = was.body
        else:
            found = await comments.get_comment(gh, req.repo, comment_id)
            if found is None:
                continue
            body = str(found.get("body") or "")
        now = with_banner(body, banner_for(ctx, req.repo_id, set(planned.projects)))
        if now != body:
            await vcs.edit_comment(
                gh,
                ctx.records,
                repo=req.repo,
                repo_id=req.repo_id,
                number=planned.number,
                comment_id=comment_id,
                body=now,
            )


def _recheck_drift(ctx: WorkerContext, req: PushRequest, where: ApplyConversation, project: Project) -> None:
    """An apply asked for in a drift issue succeeded: the drift check that closes it when clean, now."""
    if where.is_pr or where.number is None:
        return
    watched = drift_issues.watched(ctx.redis, req.repo_id, where.number)
    if watched is not None:
        target = replace(DriftTarget.from_plain(watched["target"]), project=project.name)
        follow_ups.check_drift(ctx.redis, target)


def closes_on_success(ctx: WorkerContext, req: PushRequest, where: ApplyConversation) -> bool:
    """Does an apply that succeeds close the issue it talked on? Not a drift issue: its next check does."""
    if where.is_pr or where.number is None:
        return False
    return drift_issues.watched(ctx.redis, req.repo_id, where.number) is None
