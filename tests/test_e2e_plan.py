"""PR planning end to end: stand-in GitHub, real Redis, a real worker process, real terraform."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
from rq.job import Job
from rq.rate_limit import RateLimitRegistry

from core.contract import Jobs
from core.projects import Project
from plumbing.job_options import project_rate_limit
from standin.stack import running_stack
from tests.e2e import applied_state, bot_bodies, finished_jobs, infra_repo, plan_jobs, planned
from tests.jobs.holders import running_job
from tests.tfproject import main_tf
from workers.adapters.queue import slots

pytestmark = pytest.mark.e2e


def test_pr_plans_comment_once_and_gate_destroys(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state, also={"README.md": "hello\n"})

        adding = gh.open_pr(
            repo,
            "add",
            "alice",
            "Add a resource",
            {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "fresh": "c"})},
        )
        states = planned(stack, repo, adding.head_sha)
        assert states == {"plangate/plan": "success", "plangate/destroy": "success"}, stack.worker_log()[-3000:]
        assert redis_conn.hget("plangate:metrics:github-wait-seconds", "pacing") is None  # a lone PR never waits
        comments = bot_bodies(stack, repo, adding.number)
        assert len(comments) == 1
        assert "1 to add, 0 to change, 0 to destroy" in comments[0]
        assert "terraform_data.fresh" in comments[0]
        destroy = gh.reports(repo, adding.head_sha)["plangate/destroy"]
        assert destroy.description and "no destroy" in destroy.description.lower()
        assert destroy.target_url and destroy.target_url.startswith("http")

        removing = gh.open_pr(
            repo, "remove", "alice", "Remove a resource", {"infra/main.tf": main_tf(state, {"keep": "a"})}
        )
        states = planned(stack, repo, removing.head_sha)
        assert states == {"plangate/plan": "success", "plangate/destroy": "failure"}
        description = gh.reports(repo, removing.head_sha)["plangate/destroy"].description or ""
        assert "1 to destroy" in description and "/approve-destroy" in description
        comment = bot_bodies(stack, repo, removing.number)[0]
        assert "`terraform_data.doomed`" in comment and "0 to add, 0 to change, 1 to destroy" in comment

        first_sha = adding.head_sha
        before = len(gh.state.requests)
        new_sha = gh.push_pr(adding, {"infra/main.tf": main_tf(state, {"keep": "a2", "doomed": "b", "fresh": "c"})})
        assert new_sha != first_sha
        planned(stack, repo, new_sha)
        comments = bot_bodies(stack, repo, adding.number)
        assert len(comments) == 1, "a push must edit the plan comment, not add one"
        assert new_sha[:7] in comments[0] and "1 to add, 1 to change, 0 to destroy" in comments[0]
        # the PR's only project: its dispatch planned and published it in place, no job hop (it ends after
        # its statuses, so wait for the fallback publish that follows it); the fallback wrote nothing
        publishes = (Jobs.PUBLISH_PLAN,)
        stack.wait_for("the fallback publish", lambda: finished_jobs(redis_conn, new_sha, publishes))
        assert [j.func_name for j in plan_jobs(redis_conn, new_sha)] == [Jobs.PLAN_PR]
        writes = [r for r in gh.state.requests[before:] if r.method in ("POST", "PATCH") and "/comments" in r.path]
        assert len(writes) == 1, writes
        assert state.exists()  # the PR plans never touched the state


def test_a_project_busy_elsewhere_is_planned_in_a_job_that_waits_its_turn(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        limit = project_rate_limit(repo.id, Project("infra", "infra"))
        applying = running_job(redis_conn, "an apply")  # another job of the project runs: it holds the slot
        assert slots.take(redis_conn, limit, applying.id)

        files = {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "fresh": "c"})}
        pr = gh.open_pr(repo, "add", "alice", "Add a resource", files)
        registry = RateLimitRegistry(limit.key, redis_conn)
        (waiting,) = stack.wait_for("the plan's job, waiting", registry.get_rate_limited_job_ids)
        assert Job.fetch(waiting, connection=redis_conn).func_name == Jobs.PLAN_AND_PUBLISH
        assert gh.reports(repo, pr.head_sha)["plangate/plan"].state == "pending"

        slots.give_back(redis_conn, limit, applying.id)
        assert planned(stack, repo, pr.head_sha) == {"plangate/plan": "success", "plangate/destroy": "success"}
        # the job ends just after its statuses: wait for RQ to record it before reading what ran
        ran = stack.wait_for("the plan job to end", lambda: plan_jobs(redis_conn, pr.head_sha))
        assert [j.id for j in ran] == [waiting]
        assert len(bot_bodies(stack, repo, pr.number)) == 1


def test_fork_and_config_errors_are_explained(tmp_path: Path, redis_url: str, redis_conn: object) -> None:
    state = tmp_path / "state" / "terraform.tfstate"
    base = main_tf(state, {"keep": "a"})
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": base})

        allow_itself = "version: 1\nallow_fork_prs: true\n"
        fork = gh.open_pr(
            repo,
            "evil",
            "mallory",
            "From a fork",
            {"infra/main.tf": base + "\n", ".plangate.yml": allow_itself},
            fork="mallory/infra",
        )
        states = planned(stack, repo, fork.head_sha)
        assert states == {"plangate/plan": "failure", "plangate/destroy": "failure"}
        comments = bot_bodies(stack, repo, fork.number)
        assert len(comments) == 1 and "fork" in comments[0].lower()
        assert not (tmp_path / "work" / "checkouts").exists() or not any((tmp_path / "work" / "checkouts").iterdir())

        typo = "version: 1\nprojects:\n  - name: infra\n    dir: infra\n    when_modifed: ['*.tf']\n"
        bad = gh.open_pr(repo, "typo", "alice", "Configure", {".plangate.yml": typo, "infra/main.tf": base + "\n"})
        states = planned(stack, repo, bad.head_sha)
        assert states == {"plangate/plan": "failure", "plangate/destroy": "failure"}
        comment = bot_bodies(stack, repo, bad.number)[0]
        assert "projects[0].when_modifed" in comment
        description = gh.reports(repo, bad.head_sha)["plangate/plan"].description or ""
        assert ".plangate.yml" in description
