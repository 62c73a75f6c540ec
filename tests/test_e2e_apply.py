"""Apply on merge end to end; the local state file (outside every checkout) is the ground truth."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis

from plumbing import settings as settings_module
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import (
    applied_state,
    bot_bodies,
    comment_and_wait,
    infra_repo,
    kill_the_horse_running,
    next_second,
    planned,
    status,
)
from tests.tfproject import apply_directly, main_tf, state_addresses, tool

pytestmark = pytest.mark.e2e


def _blocked_issue(stack: Stack, repo: Repo) -> int:
    """Wait for the issue a blocked direct push opens; its number."""
    return stack.wait_for(
        "the blocked-apply issue", lambda: next((n for (rid, n) in stack.gh.state.issues if rid == repo.id), None)
    )


def test_merges_apply_and_destroys_wait_for_approval(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)

        adding = gh.open_pr(
            repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "fresh": "c"})}
        )
        planned(stack, repo, adding.head_sha)
        merged = gh.merge_pr(adding, method="merge")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep", "terraform_data.doomed", "terraform_data.fresh"}
        assert any("Apply complete!" in b for b in bot_bodies(stack, repo, adding.number))

        removing = gh.open_pr(
            repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a", "fresh": "c"})}
        )
        planned(stack, repo, removing.head_sha)
        merged = gh.merge_pr(removing, method="squash")
        assert "blocked: 1 gated change" in status(stack, repo, merged, "plangate/apply", "failure")
        assert "terraform_data.doomed" in state_addresses(state)
        blocked = [b for b in bot_bodies(stack, repo, removing.number) if "plangate:apply-blocked" in b]
        assert len(blocked) == 1 and "`terraform_data.doomed`" in blocked[0]

        next_second()  # approvals come after the plan they approve went out
        gh.comment(repo, removing.number, "alice", "/approve-destroy")  # the author may not
        gh.comment(repo, removing.number, "bob", "/approve-destroy")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep", "terraform_data.fresh"}


def test_pr_approval_carries_over_unless_the_destroy_set_grew(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)

        pr = gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        planned(stack, repo, pr.head_sha)
        next_second()  # approvals come after the plan they approve went out
        gh.comment(repo, pr.number, "bob", "/approve-destroy")
        status(stack, repo, pr.head_sha, "plangate/destroy", "success")
        merged = gh.merge_pr(pr, method="rebase")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep"}

        # state moves between approval and merge: the merge plan destroys one more thing
        apply_directly(tmp_path / "applied", main_tf(state, {"keep": "a", "doomed": "b", "stray": "s"}))
        pr2 = gh.open_pr(repo, "drop2", "alice", "Drop again", {"infra/main.tf": main_tf(state, {"keep": "a2"})})
        planned(stack, repo, pr2.head_sha)
        apply_directly(tmp_path / "applied2", main_tf(state, {"keep": "a", "doomed": "b", "stray": "s", "late": "l"}))
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr2.number, "bob", "/approve-destroy")
        merged2 = gh.merge_pr(pr2, method="merge")
        assert "blocked: 1 gated change" in status(stack, repo, merged2, "plangate/apply", "failure")
        blocked = next(b for b in bot_bodies(stack, repo, pr2.number) if "plangate:apply-blocked" in b)
        assert "`terraform_data.late`" in blocked
        assert "terraform_data.late" in state_addresses(state)


def test_direct_push_opens_an_issue_and_approval_there_applies(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pushed = gh.push(repo, "main", {"infra/main.tf": main_tf(state, {"keep": "a"})}, "alice")
        status(stack, repo, pushed, "plangate/apply", "failure", "blocked")
        number = _blocked_issue(stack, repo)
        title = gh.state.issues[(repo.id, number)].title
        assert title == f"plangate: apply blocked on {pushed[:7]} (infra)"
        next_second()  # approvals come after the plan they approve went out
        gh.comment(repo, number, "bob", "/approve-destroy")
        status(stack, repo, pushed, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep"}
        assert gh.state.issues[(repo.id, number)].state == "closed"


def test_two_quick_pushes_apply_one_at_a_time_in_order(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url, workers=2) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        first = gh.push(repo, "main", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "one": "1"})}, "al")
        second = gh.push(
            repo, "main", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "one": "1", "two": "2"})}, "al"
        )
        status(stack, repo, second, "plangate/apply", "success")
        assert {"terraform_data.one", "terraform_data.two"} <= state_addresses(state)
        runs = [json.loads(r) for r in redis_conn.lrange("plangate:runs", 0, -1)]
        applies = [r for r in reversed(runs) if r.get("kind") == "apply" and r.get("result") == "applied"]
        order = [r["sha"] for r in applies]
        assert order in ([first, second], [second]), order  # never the older one after the newer
        serial = json.loads(state.read_text())["serial"]
        assert serial >= 2


SLOW_FIRST_APPLY = """#!/bin/sh
# terraform, except that the first `apply` says so and hangs: the test then kills the RQ work horse
# running it (a worker lost mid-apply). From inside the sandbox it could not kill the horse itself.
if [ "$1" = "apply" ] && [ ! -e "$KILLER_MARKER" ]; then
  touch "$KILLER_MARKER"
  sleep 120
  exit 1
fi
exec {real} "$@"
"""


def test_apply_that_dies_is_reported_and_rerun_by_plan(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = applied_state(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "terraform"
    wrapper.write_text(SLOW_FIRST_APPLY.format(real=tool()))
    wrapper.chmod(0o755)
    marker = tmp_path / "marks" / "killed-once"  # a path every sandboxed step may write
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "KILLER_MARKER": str(marker),
        "PLANGATE_TF_ENV": "KILLER_MARKER",
    }
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(
            repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "new": "n"})}
        )
        planned(stack, repo, pr.head_sha)
        merged = gh.merge_pr(pr)
        stack.wait_for("the first apply to start", marker.exists)
        kill_the_horse_running(str(bin_dir))
        assert "died" in status(stack, repo, merged, "plangate/apply", "failure")  # a check run has no "error": failure
        died = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-died" in b]
        assert len(died) == 1 and "check the state" in died[0]
        runs = RunStore(Records(redis_conn, settings_module.load(stack.env).private_key or ""))
        (killed,) = [h for h in runs.siblings(repo.id, merged) if h.kind == "apply"]
        assert (killed.outcome, killed.ok) == ("died", False) and killed.ended is not None  # its page says so

        gh.comment(repo, pr.number, "bob", "/plan")
        status(stack, repo, merged, "plangate/apply", "success")
        assert "terraform_data.new" in state_addresses(state)


def test_newer_push_supersedes_a_blocked_one_and_report_only_projects_never_apply(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        base = main_tf(state, {"keep": "a", "doomed": "b"})
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": base})
        blocked_sha = gh.push(repo, "main", {"infra/main.tf": main_tf(state, {"keep": "a"})}, "alice")
        status(stack, repo, blocked_sha, "plangate/apply", "failure", "blocked")
        number = _blocked_issue(stack, repo)

        newer = gh.push(
            repo, "main", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "more": "m"})}, "al"
        )
        status(stack, repo, newer, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep", "terraform_data.doomed", "terraform_data.more"}
        issue = gh.state.issues[(repo.id, number)]
        assert issue.state == "closed"
        assert any("plangate:apply-superseded" in b for b in bot_bodies(stack, repo, number))

        report_only = "version: 1\nprojects:\n  - name: infra\n    dir: infra\n    apply_on_merge: false\n"
        files: dict[str, str | None] = {
            ".plangate.yml": report_only,
            "infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b", "more": "m", "x": "x"}),
        }
        feature = gh.push(repo, "feature", {"infra/main.tf": main_tf(state, {"keep": "a"})}, "alice")
        held = gh.push(repo, "main", files, "alice")
        assert "not applied" in status(stack, repo, held, "plangate/apply", "success")
        assert "terraform_data.x" not in state_addresses(state)
        assert gh.reports(repo, feature) == {}, "only the apply branch applies"  # its job ran first (FIFO)
