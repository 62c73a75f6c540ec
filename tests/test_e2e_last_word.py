"""Nothing pending forever, nothing reported untrue: a bad day's stories, end to end.

Stand-in GitHub with fault injection (an outage, a request that hangs), real Redis, real worker
processes (their work horses killed as an OOM kill or a lost node would), real terraform behind
wrappers that say when a step starts. The outage settings are scaled down (a one-second retry budget
per request, a one-minute outage window) so that each story is the documented one in proportion.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
import redis

from core.contract import PLAN_RETRIES, Jobs
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import applied_state, bot_bodies, horse_of, infra_repo, next_second, planned, status
from tests.tfproject import apply_directly, main_tf, state_addresses, tool

pytestmark = pytest.mark.e2e

SCALED = {"PLANGATE_GITHUB_RETRY_SECONDS": "1", "PLANGATE_OUTAGE_WINDOW": "60"}


def _wrapper(tmp_path: Path, body: str) -> dict[str, str]:
    """Settings that put `terraform` = the shell `body` (given the real one as $REAL) first on PATH;
    its marks go to `marks/`, which every sandboxed step may write."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "terraform"
    script.write_text(f'#!/bin/sh\nREAL={tool()}\nMARKS={tmp_path / "marks"}\n{body}\nexec "$REAL" "$@"\n')
    script.chmod(0o755)
    (tmp_path / "marks").mkdir(exist_ok=True)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _plan_comments(stack: Stack, repo: Repo, number: int) -> list[str]:
    return [b for b in bot_bodies(stack, repo, number) if "plangate:plan " in b]


def _kill_every_try(stack: Stack, job: str, tries: int) -> float:
    """SIGKILL the work horse running `job` on each of its `tries`; when the last one died."""
    killed: list[int] = []
    for attempt in range(1, tries + 1):
        horse = stack.wait_for(f"try {attempt} of {job}", lambda: horse_of(job, besides=killed), timeout=180)
        os.kill(horse, signal.SIGKILL)
        killed.append(horse)
    return time.monotonic()


def test_a_dispatch_killed_on_every_try_ends_with_an_error_and_one_comment(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        repo = infra_repo(stack, state)
        # every try of the dispatch hangs on GitHub until its horse is killed (a request that times out
        # and is tried again hangs again)
        stack.gh.faults.hang("GET", r"/repos/acme/infra/pulls/\d+/files", seconds=300, times=100)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        last_death = _kill_every_try(stack, Jobs.PLAN_PR, 1 + PLAN_RETRIES)
        said = status(stack, repo, pr.head_sha, "plangate/plan", "failure", "Plan lost")
        print(f"\nlast word {time.monotonic() - last_death:.1f} s after the dispatch's last death")
        assert "stopped on every try" in said
        assert "No verdict" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        (comment,) = stack.wait_for("the lost-plan comment", lambda: _plan_comments(stack, repo, pr.number) or None)
        assert "could not finish the plan" in comment and "/plan" in comment

        stack.gh.faults.clear()
        stack.gh.comment(repo, pr.number, "alice", "/plan")  # the way back the comment names
        assert "1 to destroy" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
        (comment,) = _plan_comments(stack, repo, pr.number)
        assert "could not finish" not in comment


SLOW_SHOW = """if [ "$1" = "show" ] && [ ! -e "$MARKS/showing" ]; then touch "$MARKS/showing"; sleep 2; fi"""


def test_a_publish_waits_out_an_outage_and_reports_what_happened(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    env = {**SCALED, **_wrapper(tmp_path, SLOW_SHOW), "PLANGATE_REPORT": "statuses"}
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        stack.wait_for("the plan's last step", (tmp_path / "marks" / "showing").exists)
        stack.gh.faults.outage()  # twenty times one request's retry budget, a third of the window
        time.sleep(20)
        stack.gh.faults.back()
        back = time.monotonic()
        assert "1 to destroy" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
        assert status(stack, repo, pr.head_sha, "plangate/plan", "success")
        print(f"\npublished {time.monotonic() - back:.1f} s after GitHub came back")
        assert len(_plan_comments(stack, repo, pr.number)) == 1
        assert int(redis_conn.hget("plangate:metrics:jobs", "outage") or 0) >= 1


def test_an_outage_longer_than_the_window_ends_in_one_true_comment_once_github_is_back(
    tmp_path: Path, redis_url: str
) -> None:
    state = applied_state(tmp_path)
    env = {**_wrapper(tmp_path, SLOW_SHOW), "PLANGATE_GITHUB_RETRY_SECONDS": "1", "PLANGATE_OUTAGE_WINDOW": "8"}
    with running_stack(tmp_path, redis_url, extra_env={**env, "PLANGATE_REPORT": "statuses"}) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        stack.wait_for("the plan's last step", (tmp_path / "marks" / "showing").exists)
        stack.gh.faults.outage()
        time.sleep(25)
        stack.gh.faults.back()
        # whichever job gave up last (the plan's, or the publish it left behind) says so, once
        (comment,) = stack.wait_for(
            "the comment",
            lambda: [c for c in _plan_comments(stack, repo, pr.number) if "GitHub could not" in c] or None,
        )
        assert "could not finish the plan" in comment or "the whole outage window" in comment
        reports = stack.gh.reports(repo, pr.head_sha)
        assert {reports["plangate/plan"].state, reports["plangate/destroy"].state} <= {"error", "failure"}
        assert len(_plan_comments(stack, repo, pr.number)) == 1


# The merge's fresh plan runs with the apply's plugin cache (`plugin-cache/trusted`), a PR's with its own.
HANG_MERGE_PLAN = """case "$TF_PLUGIN_CACHE_DIR" in
  */plugin-cache/trusted*) if [ "$1" = "plan" ] && [ ! -e "$MARKS/hung" ]; then touch "$MARKS/hung"; sleep 300; fi;;
esac
if [ "$1" = "apply" ]; then echo apply >> "$MARKS/applies"; fi"""


def test_a_death_during_the_merges_fresh_plan_plans_and_applies_again_by_itself(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, extra_env=_wrapper(tmp_path, HANG_MERGE_PLAN)) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(
            repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "new": "c"})}
        )
        planned(stack, repo, pr.head_sha)
        merged = stack.gh.merge_pr(pr, method="merge")
        stack.wait_for("the merge's plan to hang", (tmp_path / "marks" / "hung").exists)
        os.kill(stack.wait_for("its horse", lambda: horse_of(Jobs.APPLY_PROJECT)), signal.SIGKILL)
        assert "applied 1 project" in status(stack, repo, merged, "plangate/apply", "success")
        assert "terraform_data.new" in state_addresses(state)
        assert (tmp_path / "marks" / "applies").read_text().count("apply") == 1
        results = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-result" in b]
        assert len(results) == 1 and "Apply complete!" in results[0]


def test_a_death_after_the_apply_reports_the_apply_that_happened(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, extra_env=_wrapper(tmp_path, HANG_MERGE_PLAN.replace("300", "0"))) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(
            repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "new": "c"})}
        )
        planned(stack, repo, pr.head_sha)
        stack.gh.faults.hang("POST", rf"/repos/acme/infra/issues/{pr.number}/comments", seconds=300)
        merged = stack.gh.merge_pr(pr, method="merge")
        stack.wait_for("the apply", lambda: (tmp_path / "marks" / "applies").exists() or None)
        horse = stack.wait_for("the horse posting", lambda: horse_of(Jobs.APPLY_PROJECT))
        stack.wait_for("its result post to hang", lambda: not stack.gh.faults.pending or None)
        os.kill(horse, signal.SIGKILL)
        assert "applied 1 project" in status(stack, repo, merged, "plangate/apply", "success")
        assert (tmp_path / "marks" / "applies").read_text().count("apply") == 1
        assert "terraform_data.new" in state_addresses(state)


SLOW_APPLY = """if [ "$1" = "apply" ]; then
  "$REAL" "$@"; code=$?; echo apply >> "$MARKS/applies"; sleep 1; exit $code
fi"""


def test_an_apply_reports_its_outcome_after_an_outage_that_began_as_it_ended(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    env = {**SCALED, **_wrapper(tmp_path, SLOW_APPLY), "PLANGATE_REPORT": "statuses"}
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(
            repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "new": "c"})}
        )
        planned(stack, repo, pr.head_sha)
        merged = stack.gh.merge_pr(pr, method="merge")
        stack.wait_for("terraform apply", lambda: (tmp_path / "marks" / "applies").exists() or None)
        stack.gh.faults.outage()
        time.sleep(20)
        stack.gh.faults.back()
        back = time.monotonic()
        assert "applied 1 project" in status(stack, repo, merged, "plangate/apply", "success")
        print(f"\napply reported {time.monotonic() - back:.1f} s after GitHub came back")
        results = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-result" in b]
        assert len(results) == 1 and "Apply complete!" in results[0]
        assert (tmp_path / "marks" / "applies").read_text().count("apply") == 1


def test_a_held_apply_survives_redis_losing_everything(tmp_path: Path) -> None:
    from standin.local_redis import PrivateRedis

    state = applied_state(tmp_path)
    server = PrivateRedis()
    server.start()
    try:
        with running_stack(tmp_path, server.url) as stack:
            repo = infra_repo(stack, state)
            pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
            planned(stack, repo, pr.head_sha)
            merged = stack.gh.merge_pr(pr, method="squash")
            assert "blocked: 1 gated change" in status(stack, repo, merged, "plangate/apply", "failure")
            server.stop()
            server.start()  # back, and empty: the held apply's record is gone
            client = redis.Redis.from_url(server.url)
            stack.wait_for("the workers to register again", lambda: client.exists("rq:workers") or None, timeout=90)
            next_second()
            stack.gh.comment(repo, pr.number, "bob", "/approve-destroy")
            assert "applied 1 project" in status(stack, repo, merged, "plangate/apply", "success")
            assert state_addresses(state) == {"terraform_data.keep"}
            results = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-result" in b]
            assert len(results) == 1
    finally:
        server.close()


TWO_PROJECTS_SLOW = """if [ "$1" = "plan" ] && [ ! -e "$MARKS/slow" ]; then touch "$MARKS/slow"; sleep 8; fi"""


def test_plans_whose_publish_redis_lost_are_planned_again(tmp_path: Path) -> None:
    from standin.local_redis import PrivateRedis

    state = applied_state(tmp_path)
    other = tmp_path / "state" / "other.tfstate"
    apply_directly(tmp_path / "applied-other", main_tf(other, {"keep": "a"}))
    server = PrivateRedis()
    server.start()
    try:
        with running_stack(tmp_path, server.url, extra_env=_wrapper(tmp_path, TWO_PROJECTS_SLOW)) as stack:
            repo = infra_repo(stack, state, also={"other/main.tf": main_tf(other, {"keep": "a"})})
            files = {"infra/main.tf": main_tf(state, {"keep": "a"}), "other/main.tf": main_tf(other, {"keep": "b"})}
            pr = stack.gh.open_pr(repo, "both", "alice", "Both", files)
            stack.wait_for("a plan under way", (tmp_path / "marks" / "slow").exists)
            server.stop()
            server.start()  # empty: the plan jobs' publish is gone
            assert "1 to destroy" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
            assert status(stack, repo, pr.head_sha, "plangate/plan", "success")
            assert len(_plan_comments(stack, repo, pr.number)) == 1
    finally:
        server.close()


HANG_FIRST_PLAN = """if [ "$1" = "plan" ] && [ ! -e "$MARKS/hung" ]; then touch "$MARKS/hung"; sleep 300; fi"""


def _tree(root: int) -> list[int]:
    """`root` and every process below it."""
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit() and _parent_of(int(proc.name)) == pid:
                todo.append(int(proc.name))
    return found


def _parent_of(pid: int) -> int | None:
    try:
        return int((Path("/proc") / str(pid) / "stat").read_text().rsplit(") ", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def test_a_worker_lost_with_its_machine_is_found_and_its_plan_run_by_another(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, workers=2, extra_env=_wrapper(tmp_path, HANG_FIRST_PLAN)) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        stack.wait_for("the plan to hang", (tmp_path / "marks" / "hung").exists)
        horse = stack.wait_for("its horse", lambda: horse_of(Jobs.PLAN_PR) or horse_of(Jobs.PLAN_AND_PUBLISH))
        worker = _parent_of(horse)
        assert worker is not None and worker in [w.pid for w in stack.workers]
        lost = time.monotonic()
        for pid in _tree(worker):  # the machine is gone: the worker, its horse, its scheduler, terraform
            with contextlib.suppress(ProcessLookupError):  # a short-lived child may end between list and kill
                os.kill(pid, signal.SIGKILL)
        assert "1 to destroy" in status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
        print(f"\nthe plan of a lost worker was published {time.monotonic() - lost:.1f} s after the loss")
        assert len(_plan_comments(stack, repo, pr.number)) == 1


def test_a_merge_whose_apply_was_lost_is_applied_by_plan_on_its_pr(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(
            repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "new": "c"})}
        )
        planned(stack, repo, pr.head_sha)
        stack.gh.faults.hang("GET", r"/repos/acme/infra/compare/.*", seconds=300, times=100)
        merged = stack.gh.merge_pr(pr, method="merge")
        os.kill(stack.wait_for("the apply's dispatch", lambda: horse_of(Jobs.APPLY_PUSH)), signal.SIGKILL)
        assert "Apply lost before it started" in status(stack, repo, merged, "plangate/apply", "failure")
        lost = stack.wait_for(
            "the comment", lambda: [b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-lost" in b] or None
        )
        assert len(lost) == 1 and "Nothing was applied" in lost[0]
        assert "terraform_data.new" not in state_addresses(state)

        stack.gh.faults.clear()
        stack.gh.comment(repo, pr.number, "alice", "/plan")
        assert "applied 1 project" in status(stack, repo, merged, "plangate/apply", "success")
        assert "terraform_data.new" in state_addresses(state)

        later = stack.gh.push(repo, "main", {"README.md": "moved on\n"}, "alice")
        status(stack, repo, later, "plangate/apply", "success")
        stack.gh.comment(repo, pr.number, "alice", "/plan")  # main moved on: this merge is not applied again
        said = stack.wait_for(
            "the refusal", lambda: [b for b in bot_bodies(stack, repo, pr.number) if "has moved on to" in b] or None
        )
        assert f"main has moved on to {later[:7]}" in said[0]
