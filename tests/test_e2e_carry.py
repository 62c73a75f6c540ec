"""Smart re-planning end to end (web, RQ workers, terraform in the sandbox): a push plans only what it
changed, the carried plan's destroy needs approving again at the new head, and the merge applies what
that approval covers."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from core.contract import Jobs
from standin.stack import Stack, running_stack
from tests.e2e import (
    applied_state,
    bot_bodies,
    comment_and_wait,
    infra_repo,
    plan_jobs,
    planned,
    planned_dirs,
    plans_ended,
    status,
)
from tests.tfproject import main_tf, state_addresses

pytestmark = pytest.mark.e2e

OTHER = 'resource "terraform_data" "one" {\n  input = "1"\n}\n'


def _plans_run(stack: Stack, conn: redis.Redis, sha: str, count: int) -> list[str]:
    return sorted(d for j in plans_ended(stack, conn, sha, count) for d in planned_dirs(j))


def test_a_push_replans_what_changed_and_the_carried_destroy_is_approved_again(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state, also={"other/main.tf": OTHER})
        files = {"infra/main.tf": main_tf(state, {"keep": "a"}), "other/main.tf": OTHER.replace('"1"', '"2"')}
        pr = gh.open_pr(repo, "both", "alice", "Drop doomed, change one", files)
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        first = pr.head_sha

        second = gh.push_pr(pr, {"other/main.tf": OTHER.replace('"1"', '"3"')})
        assert planned(stack, repo, second)["plangate/destroy"] == "failure"  # the approval was for `first`
        assert _plans_run(stack, redis_conn, first, 2) == ["infra", "other"]
        assert _plans_run(stack, redis_conn, second, 1) == ["other"]
        assert {j.func_name for j in plan_jobs(redis_conn, first)} == {Jobs.PLAN_PROJECT}
        # the push's one plan to make: its dispatch made it and published it with the carried one
        assert [j.func_name for j in plan_jobs(redis_conn, second)] == [Jobs.PLAN_PR]
        (comment,) = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:plan" in b]
        assert f"carried from `{first[:7]}`" in comment and "terraform_data.doomed" in comment

        # RQ no longer holds the carried plan (its result outlived its TTL): it is made again.
        (infra_job,) = [j for j in plan_jobs(redis_conn, first) if planned_dirs(j) == ["infra"]]
        infra_job.delete()
        third = gh.push_pr(pr, {"README.md": "words\n"})
        planned(stack, repo, third)
        assert _plans_run(stack, redis_conn, third, 1) == ["infra"]

        assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        status(stack, repo, third, "plangate/destroy", "success")
        merged = gh.merge_pr(pr, method="merge")
        status(stack, repo, merged, "plangate/apply", "success")  # a fresh plan at the merge, then the apply
        assert state_addresses(state) == {"terraform_data.keep"}
