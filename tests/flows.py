"""Flows driven directly, in this process: the GitHub stand-in on a thread, real Redis, git and terraform,
no web process, no RQ worker (a plan is kept as RQ keeps a plan job's result). A test builds a request
from the payload GitHub would send (with the web process's own builders) and awaits one flow step, then
reads what GitHub and the state file show."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rq.job import Job, JobStatus
from rq.results import Result

from bot.events.pulls import plan_request
from bot.events.pushes import push_request
from core import redis_keys
from core.contract import Jobs, PlanRequest, PushRequest
from core.projects import Project
from core.results import ProjectResult
from plumbing import settings as settings_module
from standin.facade import StandIn
from standin.keys import new_private_key_pem
from standin.server import start
from standin.state import PullRequest, Repo
from tests.e2e import BOT, applied_state
from tests.tfproject import main_tf
from workers.context import WorkerContext, build
from workers.flows import pr_plan, pr_runner

T = TypeVar("T")

__all__ = ["World", "world_at"]


@dataclass
class World:
    gh: StandIn
    ctx: WorkerContext
    repo: Repo
    state: Path  # main's applied state file, outside every checkout
    jobs: dict[str, ProjectResult] = field(default_factory=dict)  # plan results, as RQ keeps them by job id
    made: dict[str, tuple[str, str]] = field(default_factory=dict)  # the last plan_pr's: identity → (job, SHA)

    def run(self, step: Coroutine[Any, Any, T]) -> T:
        return asyncio.run(step)

    def opened(self, branch: str, files: dict[str, str | None], author: str = "alice") -> PlanRequest:
        """Open a PR (no webhook sent) and return the request the web process would enqueue for it."""
        self.gh.open_pr(self.repo, branch, author, f"Change {branch}", files, deliver=False)
        return plan_request(self.gh.outbox[-1].payload)

    def pushed(self, pr: PullRequest, files: dict[str, str | None]) -> PlanRequest:
        self.gh.push_pr(pr, files, deliver=False)
        return plan_request(self.gh.outbox[-1].payload)

    def merged(self, pr: PullRequest) -> PushRequest:
        """Merge as @bob; the push request of the merge commit."""
        self.gh.merge_pr(pr, merged_by="bob", deliver=False)
        push = next(d for d in reversed(self.gh.outbox) if d.event == "push")
        return push_request(push.payload)

    def pr(self, number: int) -> PullRequest:
        return self.gh.state.pulls[(self.repo.id, number)]

    def plan_pr(self, req: PlanRequest) -> tuple[PlanRequest, list[ProjectResult]] | None:
        """The PR plan's steps as its jobs run them (workers.flows.pr_runner): decide the projects, plan
        each, gather what the publish shows; None when there is nothing to plan. Each plan is kept as RQ
        keeps a plan job's result, under a job id of its own, and `made` says which (for publish)."""
        decided = self.run(pr_runner.decide(self.ctx, req))
        if decided is None:
            return None
        planned = decided.request
        made = [
            (self._kept(planned, p, self.run(pr_plan.plan_project(self.ctx, planned, p))), p) for p in decided.projects
        ]
        results, self.made = pr_runner.gathered(
            self.ctx, planned, [(job, self.jobs[job]) for job, _ in made], decided.carried
        )
        return planned, results

    def _kept(self, req: PlanRequest, project: Project, result: ProjectResult) -> str:
        """`result` kept as RQ keeps a finished plan job's: the id of that job."""
        job = Job.create(
            Jobs.PLAN_PROJECT,
            kwargs={"request": req, "project": project},
            connection=self.ctx.redis,
            id=f"flow-job-{len(self.jobs)}",
            result_ttl=redis_keys.PLAN_RESULT_TTL,
        )
        job.save()
        Result.create(job, Result.Type.SUCCESSFUL, redis_keys.PLAN_RESULT_TTL, return_value=result)
        job.set_status(JobStatus.FINISHED)
        self.jobs[job.id] = result
        return job.id

    def bot_bodies(self, number: int) -> list[str]:
        return [c.body for c in self.gh.comments_on(self.repo, number) if c.user.login == BOT]

    def reports(self, sha: str) -> dict[str, tuple[str, str]]:
        """context → (state, description) of plangate's check runs or statuses on `sha`."""
        return {name: (r.state, r.description or "") for name, r in self.gh.reports(self.repo, sha).items()}


@contextmanager
def world_at(
    root: Path, redis_url: str, resources: dict[str, str], extra: dict[str, str] | None = None
) -> Iterator[World]:
    """acme/infra with `resources` applied on main (and `extra` files), @alice and @bob writers."""
    key = new_private_key_pem()
    gh = StandIn(root / "github", key, app_id=4242, slug="plangate", webhook_secret="flows")
    state = applied_state(root, resources)
    with start(gh) as server:
        env = {
            "GITHUB_APP_ID": str(gh.app.id),
            "GITHUB_APP_PRIVATE_KEY": key,
            "GITHUB_API_URL": server.base_url,
            "REDIS_URL": redis_url,
            "PLANGATE_WORKDIR": str(root / "work"),
            "PLANGATE_TF_TIMEOUT": "300",
            "PLANGATE_SANDBOX_PATHS": f"{state.parent}:rw",
        }
        ctx = build(settings_module.load(env, need_app=True))
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": main_tf(state, resources), **(extra or {})})
        for login in ("alice", "bob"):
            gh.set_permission(repo, login, "write")
        yield World(gh=gh, ctx=ctx, repo=repo, state=state)
