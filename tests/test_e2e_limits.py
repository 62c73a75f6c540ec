"""Bad input, end to end: an alias bomb in `.plangate.yml` and a PR past the project limit each get one clear
comment and failing statuses, and the bomb leaves the worker small.

Real Redis, real `plangate web` and `plangate worker` processes, the GitHub stand-in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from rq import Queue

from core.contract import PLANS_QUEUE
from standin.stack import Stack, running_stack
from tests.e2e import applied_state, bot_bodies, infra_repo, status
from tests.test_config_bounds import bomb

pytestmark = pytest.mark.e2e

WORKER_BUDGET = 100 * 1024 * 1024  # bytes: a worker's own imports take ~70 MB; an expanded bomb takes hundreds

# Runs one burst worker (it exits once the queues are empty) and prints the peak RSS of it and of every
# process it waited for: its work horses, and their git.
_MEASURED = """
import json, resource, subprocess, sys
subprocess.run([sys.executable, "-m", "plangate", "worker", "--burst"], check=True)
print(json.dumps({"maxrss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


def _burst_worker_peak(stack: Stack) -> int:
    """Work the queued jobs with one burst worker; the peak RSS, in bytes, of the worker and its work horses."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURED], env=stack.env, capture_output=True, text=True, timeout=600, check=True
    )
    peak: int = json.loads(out.stdout.strip().splitlines()[-1])["maxrss"]
    return peak


def test_an_alias_bomb_gets_a_clear_comment_and_leaves_the_worker_small(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, workers=0) as stack:
        repo = infra_repo(stack, state)
        text = bomb(8)  # 388 bytes naming 9**9 strings
        pr = stack.gh.open_pr(repo, "bomb", "alice", "A config", {".plangate.yml": text})
        stack.wait_for("the PR's plan job", lambda: Queue(PLANS_QUEUE, connection=redis_conn).count >= 1)
        peak = _burst_worker_peak(stack)
        status(stack, repo, pr.head_sha, "plangate/plan", "failure", "invalid .plangate.yml: (file)")
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "invalid .plangate.yml")
        (comment,) = bot_bodies(stack, repo, pr.number)
        assert "**`.plangate.yml` is invalid**: `(file)`: line 1: aliases expand to more than 100,000" in comment
        assert len(comment) < 1_000
        print(f"\nworker peak RSS with a {len(text)}-byte alias bomb: {peak / 2**20:.0f} MiB")
        assert peak < WORKER_BUDGET, f"the worker reached {peak / 2**20:.0f} MiB"


def test_a_pr_past_the_project_limit_is_refused_with_the_count_and_the_limit(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, extra_env={"PLANGATE_MAX_PROJECTS": "3"}) as stack:
        repo = infra_repo(stack, state)
        files = {f"p{i}/main.tf": 'resource "terraform_data" "x" {}\n' for i in range(4)}
        pr = stack.gh.open_pr(repo, "wide", "alice", "Four projects", files)
        status(stack, repo, pr.head_sha, "plangate/plan", "failure", "4 projects affected; the limit is 3")
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "not planned: 4 projects affected")
        (comment,) = bot_bodies(stack, repo, pr.number)
        assert "this change affects 4 Terraform projects; plangate plans at most 3 for one change" in comment
        assert "`PLANGATE_MAX_PROJECTS`" in comment and "Nothing was planned or applied" in comment
