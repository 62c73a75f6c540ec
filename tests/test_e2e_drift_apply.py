"""`/apply` in a drift issue: main's code applied again through the gate, approvals on that issue, and the
drift check that follows closes the issue once reality matches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from rq import Queue

from core import redis_keys
from core.contract import PLANS_QUEUE, Jobs
from core.drift_schedule import DriftTarget
from standin.stack import Stack, running_stack
from standin.state import Issue, Repo
from tests.e2e import bot_bodies, comment_and_wait, next_second, status
from tests.tfproject import apply_directly, main_tf, state_addresses

pytestmark = pytest.mark.e2e
CONFIG = 'version: 1\nprojects:\n  - name: app\n    dir: infra\n    drift:\n      schedule: "0 3 * * *"\n'


def _issues(stack: Stack, repo: Repo) -> list[Issue]:
    with stack.gh.state.lock:
        return [i for (rid, _), i in sorted(stack.gh.state.issues.items()) if rid == repo.id]


def test_apply_in_a_drift_issue_is_gated_and_the_next_check_closes_it(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = tmp_path / "state" / "terraform.tfstate"
    # reality has an object main's code does not: applying main destroys it
    apply_directly(tmp_path / "applied", main_tf(state, {"keep": "a", "stray": "x"}))
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo(
            "acme", "infra", {"infra/main.tf": main_tf(state, {"keep": "a"}), ".plangate.yml": CONFIG}
        )
        gh.set_permission(repo, "alice", "write")
        gh.set_permission(repo, "bob", "write")
        gh.set_permission(repo, "eve", "read")
        queue = Queue(PLANS_QUEUE, connection=redis_conn)
        queue.enqueue(Jobs.REFRESH_DRIFT_TARGETS)
        stack.wait_for("the drift targets", lambda: redis_conn.get(redis_keys.DRIFT_TARGETS))
        (target,) = json.loads(redis_conn.get(redis_keys.DRIFT_TARGETS) or b"[]")
        queue.enqueue(Jobs.DRIFT_CHECK, kwargs={"target": DriftTarget.from_plain(target)})
        issue = stack.wait_for("the drift issue", lambda: next(iter(_issues(stack, repo)), None))
        assert issue.title == "Drift in app" and "terraform_data.stray" in (issue.body or "")

        assert "refused" in comment_and_wait(stack, repo, issue.number, "eve", "/apply")  # read access only
        head = gh.head(repo, "main") or ""
        started = comment_and_wait(stack, repo, issue.number, "alice", "/apply")
        assert f"/apply: planning `app` at {head[:7]}" in started
        status(stack, repo, head, "plangate/apply", "failure", "blocked: 1 gated change")
        blocked = next(b for b in bot_bodies(stack, repo, issue.number) if "plangate:apply-blocked" in b)
        assert "`terraform_data.stray`" in blocked
        assert "terraform_data.stray" in state_addresses(state), "nothing is destroyed before an approval"

        next_second()
        assert "refused" in comment_and_wait(stack, repo, issue.number, "alice", "/approve-destroy")
        assert "terraform_data.stray" in state_addresses(state)
        assert "Approved by @bob" in comment_and_wait(stack, repo, issue.number, "bob", "/approve-destroy")
        status(stack, repo, head, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep"}

        def closed() -> bool:
            return next(i for i in _issues(stack, repo) if i.number == issue.number).state == "closed"

        stack.wait_for("the drift check that closes the issue", closed)
        assert any("No drift at" in b for b in bot_bodies(stack, repo, issue.number))
