"""A multi-project PR plan shows its progress in the PR's plan comment: "Planning N projects at <sha>:
k of N done", the projects still running each linked to its live run page, until the publish replaces
it with the plan. A single project's plan shows nothing until its plan, as a comment per edit would
cost more than it tells.

GitHub requests stay few: the dispatch writes "0 of N" once, then at most one edit per
PROGRESS_EVERY seconds for the PR across all workers (a Redis turn, SET NX EX), and only when a
project's plan ends; a project that ends within the turn is shown by the next edit or by the plan.
Edits go through vcs.upsert_comments, the publish's own path: the same comment (posted only if the PR
has none yet), every text recorded as written before it is sent, so the comment-restore logic puts
back whatever plangate wrote last, progress included.

The publish always wins. Every edit of the PR's plan comment, progress or publish, holds a short
Redis lock on it. The publish first sets a sealed flag "the plan of this SHA is being published",
then takes the lock (waiting out any holder: a lock outlives no holder by more than its TTL). A
progress edit takes the lock without waiting and, holding it, reads the flag and the PR's head: it
edits only when the flag is unset and its SHA is still the head. So a progress edit either finished
before the publish took the lock, or saw the flag and did nothing; and an older SHA's progress never
edits once a newer SHA is dispatched (the head moved). A progress edit gives up on GitHub within half
the lock's TTL (longer than GitHub itself lets a request run), so none is in flight once the lock has
expired; a holder that died leaves the lock to expire, which the publish waits out.

Nothing here touches the gate: the progress body has no plan and no approval marker, and a SHA whose
plan was already published (a `/plan` again, a re-plan on the test merge) gets no progress at all,
so a published plan of a SHA is never hidden while approvals of it still count.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager

from core import redis_keys
from core.contract import PlanRequest
from core.projects import Project, identity_label
from core.render.progress import render_progress
from workers.adapters.github import vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.store import gates as gate_store
from workers.adapters.store import plan_progress as store
from workers.adapters.store import pr_heads
from workers.context import WorkerContext

log = logging.getLogger("plangate.plan")

FIRST_WAIT = 5.0  # the "0 of N" waits this long for an edit in flight (an older SHA's publish)
EDIT_TIMEOUT = redis_keys.COMMENT_LOCK_TTL / 2  # a progress edit's GitHub requests, at most
PUBLISH_WAIT = redis_keys.COMMENT_LOCK_TTL + 5.0  # the publish waits out any holder, a dead one's TTL too


async def start(ctx: WorkerContext, req: PlanRequest, projects: Sequence[Project], jobs: Mapping[str, str]) -> None:
    """The dispatch plans `projects` in the jobs `jobs` (identity → job id): with two or more, the
    comment says so now."""
    if req.pr == 0 or len(projects) < 2:
        return
    records, repo_id = ctx.records, req.repo_id
    with _quietly(req):
        published = store.published(records, repo_id, req.pr, req.sha)
        if published or gate_store.load_plan(records, repo_id, req.pr, req.sha) is not None:
            return  # this SHA's plan is out: it stays until the new one replaces it
        store.start(records, repo_id, req.pr, req.sha, {p.identity: identity_label(p.identity) for p in projects})
        store.planned_by(records, repo_id, req.pr, req.sha, jobs)
        store.take_turn(records, repo_id, req.pr, first=True)
        await _edit(ctx, req, wait=FIRST_WAIT)


async def done(ctx: WorkerContext, req: PlanRequest, identity: str, job: str) -> None:
    """Job `job` ended its plan of `identity`: the comment shows it, unless an edit went out lately.
    Only an edit reads the whole progress (every project, job and plan ended): a PR of N projects
    would otherwise read N entries at the end of each of its N plans."""
    if req.pr == 0:
        return  # a merge group: no conversation
    with _quietly(req):
        store.ended(ctx.records, req.repo_id, req.pr, req.sha, identity, job)
        if not store.counted(ctx.records, req.repo_id, req.pr, req.sha):
            return
        if store.take_turn(ctx.records, req.repo_id, req.pr):
            await _edit(ctx, req, wait=0.0)


def handed_on(ctx: WorkerContext, req: PlanRequest, jobs: Mapping[str, str]) -> None:
    """A batch handed projects on to jobs of their own (identity → job id): their run pages are there."""
    if not (req.pr and jobs):
        return
    with _quietly(req):
        if store.load(ctx.records, req.repo_id, req.pr, req.sha) is not None:
            store.planned_by(ctx.records, req.repo_id, req.pr, req.sha, jobs)


@asynccontextmanager
async def publishing(ctx: WorkerContext, req: PlanRequest) -> AsyncIterator[None]:
    """Around the publish's edit of the plan comment: no progress edit of this SHA lands after it."""
    store.mark_published(ctx.records, req.repo_id, req.pr, req.sha)
    async with store.comment_lock(ctx.records, req.repo_id, req.pr, wait=PUBLISH_WAIT):
        yield


@contextmanager
def _quietly(req: PlanRequest) -> Iterator[None]:
    """A failure is logged, never raised: what progress shows is never worth failing a plan for (a
    retried plan job plans again)."""
    try:
        yield
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"[:300]
        log.warning(json.dumps({"repo": req.repo, "pr": req.pr, "sha": req.sha, "progress_failed": failure}))


async def _edit(ctx: WorkerContext, req: PlanRequest, *, wait: float) -> None:
    """The progress as it is now, in the PR's plan comment, if the publish has not begun and the SHA is
    still the PR's head; nothing when the comment's lock stays held `wait` seconds."""
    async with store.comment_lock(ctx.records, req.repo_id, req.pr, wait=wait) as held:
        if held:
            await _edit_holding_lock(ctx, req)


async def _edit_holding_lock(ctx: WorkerContext, req: PlanRequest) -> None:
    records = ctx.records
    if store.published(records, req.repo_id, req.pr, req.sha):
        return
    if pr_heads.current(ctx.redis, req.repo_id, req.pr) != req.sha:
        return  # a newer push took over
    progress = store.load(records, req.repo_id, req.pr, req.sha)
    meta = records.get_json(redis_keys.plan_meta(req.repo_id, req.pr, req.sha))
    if progress is None or not isinstance(meta, dict) or not isinstance(meta.get("mask_patterns"), list):
        return  # without the default branch's mask patterns nothing is written
    body = render_progress(
        pr=req.pr,
        sha=req.sha,
        projects=progress.projects,
        done=progress.done,
        jobs=progress.jobs,
        public_url=ctx.settings.public_url,
        mask_patterns=[*ctx.settings.mask_patterns, *meta["mask_patterns"]],
    )
    async with asyncio.timeout(EDIT_TIMEOUT):
        login = await vcs.bot_login(records, ctx.app_id, ctx.private_key, ctx.settings.api_url)
        async with installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh:
            await vcs.upsert_comments(
                gh, records, repo=req.repo, repo_id=req.repo_id, number=req.pr, login=login, kind="plan", bodies=[body]
            )
