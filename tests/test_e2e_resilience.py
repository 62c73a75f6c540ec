"""Workers that die and a Redis that restarts: nothing lost, nothing doubled, no human needed.

End to end: stand-in GitHub, real Redis (a private one that is stopped and started), real worker
processes, real terraform (behind a wrapper that can hang, so a worker can be killed mid-plan).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import redis

from core.contract import PLAN_RETRIES
from plumbing import settings as settings_module
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.local_redis import PrivateRedis
from standin.stack import running_stack
from tests.e2e import applied_state, bot_bodies, horse_running, infra_repo, kill_the_horse_running, status
from tests.tfproject import main_tf, tool
from workers.flows.run_records import RESTARTED

pytestmark = pytest.mark.e2e

SLOW_FIRST_PLAN = """#!/bin/sh
# terraform, except that the first `plan` says so and hangs: the test kills the work horse running it.
if [ "$1" = "plan" ] && [ ! -e "$HANG_MARKER" ]; then
  touch "$HANG_MARKER"
  sleep 300
  exit 1
fi
exec {real} "$@"
"""


def _fake_terraform(tmp_path: Path, script: str) -> Path:
    """A directory holding `terraform`: `script`, given the real terraform's path as `{real}`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "terraform").write_text(script.format(real=tool()))
    (bin_dir / "terraform").chmod(0o755)
    return bin_dir


def test_a_plan_whose_worker_died_is_run_again_without_anyone(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    bin_dir = _fake_terraform(tmp_path, SLOW_FIRST_PLAN)
    marker = tmp_path / "marks" / "hung-once"  # a path every sandboxed step may write
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "HANG_MARKER": str(marker), "PLANGATE_TF_ENV": "HANG_MARKER"}
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        stack.wait_for("the first plan to hang", marker.exists)
        kill_the_horse_running(str(bin_dir))
        assert "1 to destroy" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        assert status(stack, repo, pr.head_sha, "plangate/plan", "success")
        assert len([b for b in bot_bodies(stack, repo, pr.number) if "plangate:plan" in b]) == 1
        assert int(redis_conn.hget("plangate:metrics:jobs", "abandoned") or 0) == 1
        # counted when the re-run returns, just after its publish: wait for it rather than race it
        counted = stack.wait_for("the re-run counted", lambda: redis_conn.hget("plangate:metrics:jobs", "recovered"))
        assert counted == b"1"
        # the job run again is the same run, started again: its page shows the new attempt only
        runs = RunStore(Records(redis_conn, settings_module.load(stack.env).private_key or ""))
        (run,) = runs.siblings(repo.id, pr.head_sha)
        stored = runs.read(run.id)
        assert stored is not None and (run.outcome, stored.lines[0].text) == ("planned", RESTARTED)
        assert [line.text for line in stored.lines].count(RESTARTED) == 1


ALWAYS_HANGING_PLAN = """#!/bin/sh
# terraform, except that every `plan` hangs: the test kills the work horse running it, on every try.
if [ "$1" = "plan" ]; then
  sleep 300
  exit 1
fi
exec {real} "$@"
"""


def test_a_plan_whose_worker_dies_on_every_try_still_ends_with_a_comment_and_statuses(
    tmp_path: Path, redis_url: str
) -> None:
    state = applied_state(tmp_path)
    bin_dir = _fake_terraform(tmp_path, ALWAYS_HANGING_PLAN)
    with running_stack(tmp_path, redis_url, extra_env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        killed: list[int] = []
        for attempt in range(1, 2 + PLAN_RETRIES):  # the first try and every re-run
            horse = stack.wait_for(f"try {attempt} of the plan", lambda: horse_running(str(bin_dir), besides=killed))
            os.kill(horse, signal.SIGKILL)
            killed.append(horse)
        assert "1 of 1 plans failed" in status(stack, repo, pr.head_sha, "plangate/plan", "failure")
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        (comment,) = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:plan" in b]
        assert "the plan job died" in comment, comment
        runs = RunStore(Records(redis.Redis.from_url(redis_url), settings_module.load(stack.env).private_key or ""))
        (run,) = runs.siblings(repo.id, pr.head_sha)
        assert (run.outcome, run.ok) == ("died", False)  # its page does not stay "running"


def test_a_redis_outage_is_a_503_and_the_redelivery_is_planned_once(tmp_path: Path) -> None:
    state = applied_state(tmp_path)
    server = PrivateRedis()
    server.start()
    try:
        with running_stack(tmp_path, server.url) as stack:
            repo = infra_repo(stack, state)
            server.stop()
            files = {"infra/main.tf": main_tf(state, {"keep": "a"})}
            pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", files, deliver=False)
            (delivery,) = [d for d in stack.gh.outbox if d.event == "pull_request"]
            assert stack.gh.redeliver(delivery).status_code == 503  # GitHub shows it failed: redeliver later
            server.start()  # back, and empty: whatever it held is gone
            stack.wait_for("readiness", lambda: stack.gh.redeliver(delivery).status_code == 202, timeout=30)
            assert stack.gh.redeliver(delivery).status_code == 200  # the same delivery again: acted on once
            assert "1 to destroy" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
            assert len([b for b in bot_bodies(stack, repo, pr.number) if "plangate:plan" in b]) == 1
            assert all(worker.poll() is None for worker in stack.workers)  # no restart was needed
    finally:
        server.close()
