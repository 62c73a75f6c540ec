"""Flows driven directly, in this process: the GitHub stand-in on a thread, real Redis, git and terraform,
no web process, no RQ. A test builds a request from the payload GitHub would send (with the web
process's own builders) and awaits one flow step, then reads what GitHub and the state file show."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from bot.events.pulls import plan_request
from bot.events.pushes import push_request
from core.contract import PlanRequest, PushRequest
from core.results import ProjectResult
from plumbing import settings as settings_module
from standin.facade import StandIn
from standin.keys import new_private_key_pem
from standin.server import start
from standin.state import PullRequest, Repo
from tests.e2e import BOT, applied_state
from tests.tfproject import main_tf
from workers.context import WorkerContext, build
from workers.flows import carry, pr_plan

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
        """What plan_pr and its plan_project jobs do, in order; None when dispatch found nothing to plan.
        Each plan is kept under a job id of its own, as RQ keeps it, and `made` says which (for publish)."""
        dispatched = self.run(pr_plan.dispatch(self.ctx, req))
        if dispatched is None:
            return None
        planned = dispatched.request
        results, self.made = [], {}
        for project in dispatched.projects:
            result = self.run(pr_plan.plan_project(self.ctx, planned, project))
            job = f"flow-job-{len(self.jobs)}"
            self.jobs[job] = result
            results.append(result)
            self.made[result.identity] = (job, planned.sha)
        for kept in dispatched.carried:
            results.append(carry.shown_at(self.jobs[kept.last.job_id], planned, kept))
            self.made[kept.project.identity] = (kept.last.job_id, kept.last.planned_at)
        return planned, results

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
