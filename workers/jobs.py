"""The RQ entry points: the only place that runs an event loop. Each reads its typed payload
(core.contract) and runs one flow (workers.flows), which enqueues the jobs it leads to through
workers.adapters.queue."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from rq import get_current_job

from core.contract import (
    ApplyConversation,
    CommandRequest,
    CommentChange,
    GroupRequest,
    PlanRequest,
    PushRequest,
    ReviewDismissal,
)
from core.contract_cleanup import GroupGone, PullClosed
from core.drift_schedule import DriftTarget
from core.projects import Project
from core.results import BatchResult, ProjectResult
from workers.context import context
from workers.flows import accept_drift as accept_drift_flow
from workers.flows import apply_project as apply_flow
from workers.flows import (
    carry,
    cleanup,
    commands,
    dismissals,
    drift,
    group_runner,
    pr_runner,
    push_apply,
    recover,
    restore,
)
from workers.flows import last_word as last_word_flow
from workers.rescheduling import reschedulable


@reschedulable
def plan_pr(request: PlanRequest) -> list[str] | ProjectResult:
    return asyncio.run(pr_runner.plan_pr(context(), request))


@reschedulable
def plan_project(request: PlanRequest, project: Project) -> ProjectResult:
    return asyncio.run(pr_runner.plan_one(context(), request, project))


@reschedulable
def plan_projects(request: PlanRequest, projects: list[Project]) -> BatchResult:
    return asyncio.run(pr_runner.plan_batch(context(), request, projects))


@reschedulable
def plan_and_publish(request: PlanRequest, project: Project) -> ProjectResult:
    return asyncio.run(pr_runner.plan_alone(context(), request, project))


def joined() -> None:
    """Nothing: it ends once the jobs it waits on have ended, so that a publish waits on a few of these
    instead of hundreds of plans (workers.adapters.queue.fanout.FAN_IN)."""


@reschedulable
def publish_plan(
    request: PlanRequest,
    job_ids: list[str],
    carried: Sequence[carry.Carried] = (),
    fallback: bool = False,
    project: Project | None = None,
) -> None:
    asyncio.run(pr_runner.publish(context(), request, job_ids, carried, fallback, project))


@reschedulable
def plan_merge_group(request: GroupRequest) -> list[str]:
    return asyncio.run(group_runner.plan_merge_group(context(), request))


@reschedulable
def publish_merge_group(request: GroupRequest, job_ids: list[str]) -> None:
    asyncio.run(group_runner.publish_merge_group(context(), request, job_ids))


@reschedulable
def handle_command(request: CommandRequest) -> str:
    """A slash command (or a check run button); what it leads to is enqueued under ids of its own."""
    return asyncio.run(commands.run(context(), request))


def restore_comment(request: CommentChange) -> str:
    """One of plangate's comments changed or deleted by someone else: its text put back."""
    return asyncio.run(restore.on_change(context(), request))


@reschedulable
def apply_push(request: PushRequest) -> list[str]:
    return asyncio.run(push_apply.run(context(), request))


@reschedulable
def apply_project(
    push: PushRequest, project: Project, where: ApplyConversation, waits: dict[str, tuple[str, ...]] | None = None
) -> str:
    this = get_current_job()
    assert this is not None, "runs as an RQ job"
    return asyncio.run(apply_flow.run(context(), push, project, where, this.id, waits))


@reschedulable
def finish_apply(push: PushRequest, job_ids: list[str], where: ApplyConversation) -> None:
    asyncio.run(push_apply.finish_runs(context(), push, job_ids, where))


@reschedulable
def refresh_drift_targets() -> int:
    """Which repositories and projects have drift checks, from the App's installations."""
    return len(asyncio.run(drift.refresh(context())))


def drift_tick() -> list[str]:
    """Every minute (RQ cron): enqueue the drift checks due now, spread out per installation."""
    return drift.tick(context(), datetime.now(UTC))


@reschedulable
def drift_check(target: DriftTarget) -> list[str]:
    return asyncio.run(drift.check(context(), target))


@reschedulable
def drift_project(target: DriftTarget, project: Project, sha: str) -> str:
    return asyncio.run(drift.check_project(context(), target, project, sha))


@reschedulable
def accept_drift(request: CommandRequest, target: DriftTarget, project: Project) -> str:
    """`/accept-drift`: a refresh-only plan of the drift issue's project, checked, then applied."""
    this = get_current_job()
    assert this is not None, "runs as an RQ job"
    return asyncio.run(accept_drift_flow.run(context(), request, target, project, this.id))


@reschedulable
def last_word(job: str, kwargs: dict[str, Any], why: str) -> str:
    """What a job that failed for good owed (workers.watchdog), said."""
    return asyncio.run(last_word_flow.say(context(), job, kwargs, why))


@reschedulable
def recover_lost_work() -> int:
    return asyncio.run(recover.run(context(), datetime.now(UTC)))


@reschedulable
def review_dismissed(request: ReviewDismissal) -> str:
    """A dismissed review's approval stops counting (workers.flows.dismissals)."""
    return asyncio.run(dismissals.on_dismissal(context(), request))


def pull_closed(request: PullClosed) -> str:
    """A closed PR's records dropped and its queued plan cancelled (workers.flows.cleanup)."""
    return cleanup.pull_closed(context(), request)


def merge_group_gone(request: GroupGone) -> str:
    """A merge group the queue dropped: marked gone, its queued plan cancelled (workers.flows.cleanup)."""
    return cleanup.group_gone(context(), request)
