"""What a handler gets beside the event: the queues, and a place to record the outcome."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rq import Queue

from bot.enqueue import Enqueuer
from plumbing.enqueue import Enqueued


@dataclass
class Delivery:
    commands: Queue
    plans: Queue
    enqueuer: Enqueuer
    outcome: str = "ignored"
    jobs: list[str] = field(default_factory=list)
    reason: str = ""

    async def enqueue(self, queue: Queue, func: str, job_id: str, request: Any) -> Enqueued:
        """`func(request=...)` once per `job_id` (core.contract), with its kind's options (plumbing.job_options);
        `request` None: a job without arguments."""
        result = await self.enqueuer.enqueue(queue, func, job_id, request)
        self.jobs.append(job_id)
        if result.duplicate:
            if self.outcome != "enqueued":
                self.outcome = "duplicate"
        else:
            self.outcome = "enqueued"
        return result

    def ignore(self, reason: str) -> None:
        self.reason = reason


def repo_args(data: dict[str, Any]) -> dict[str, Any]:
    """The plain values every job needs to act on a repository as the installation."""
    repo = data["repository"]
    return {
        "installation_id": int(data["installation"]["id"]),
        "repo_id": int(repo["id"]),
        "repo": str(repo["full_name"]),
        "clone_url": str(repo["clone_url"]),
        "default_branch": str(repo.get("default_branch") or "main"),
    }
