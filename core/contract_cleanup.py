"""Payloads of the jobs that tidy up after GitHub closed something: a pull request, a merge group.

The web process does no Redis work beyond the enqueue (bot.events): what a close drops and cancels is
done by these jobs (workers.flows.cleanup), on the commands queue, which workers take before plans.
Like every payload (core.contract), plain values only.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.contract import job_id


@dataclass(frozen=True)
class PullClosed:
    """A closed PR: re-planned no more, its head's gate holds no other PR, its queued plan cancelled."""

    repo_id: int
    number: int
    head_sha: str
    plan_job: str  # the head's plan job (bot.events.pulls.plan_job_id)
    closed_at: str  # GitHub's time of this close: a PR closed, reopened and closed again is tidied each time
    repo: str = ""  # full name, for the run log (the status page's open PRs); "" in a job queued before it was sent
    merged: bool = False

    def job_id(self) -> str:
        return job_id("closed", self.repo_id, self.number, self.head_sha, self.closed_at)


@dataclass(frozen=True)
class GroupGone:
    """A merge group the queue dropped (merged, invalidated, dequeued): its results go to no one, its
    queued plan is cancelled."""

    repo_id: int
    head_sha: str
    plan_job: str

    def job_id(self) -> str:
        return job_id("mq-gone", self.repo_id, self.head_sha)
