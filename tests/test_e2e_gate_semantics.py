"""The gate judges what the approver saw, applies what was planned, and re-checks who approved.

End to end: stand-in GitHub, real Redis and worker processes, real terraform; state files are the
ground truth for what was destroyed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import redis
from rq import Queue

from core.contract import PLANS_QUEUE, Jobs
from core.drift_schedule import DriftTarget
from standin.stack import Stack, running_stack
from standin.state import PullRequest, Repo
from tests.e2e import (
    BASE,
    answered,
    applied_state,
    bot_bodies,
    comment_and_wait,
    infra_repo,
    next_second,
    replies,
    status,
)
from tests.tfproject import apply_directly, main_tf, state_addresses, tool

pytestmark = pytest.mark.e2e


def _approve(stack: Stack, repo: Repo, pr: PullRequest, login: str = "bob", body: str = "/approve-destroy") -> str:
    return comment_and_wait(stack, repo, pr.number, login, body)


def test_a_workspace_project_is_planned_approved_and_applied_in_its_workspace(tmp_path: Path, redis_url: str) -> None:
    state, workspaces = tmp_path / "state" / "default.tfstate", tmp_path / "state" / "ws"
    text = main_tf(state, {"keep": "a", "doomed": "b"}, workspace_dir=workspaces)
    apply_directly(tmp_path / "applied", text)
    apply_directly(tmp_path / "applied-staging", text, workspace="staging")
    staging = workspaces / "staging" / "terraform.tfstate"
    config = "version: 1\nprojects:\n  - name: app\n    dir: infra\n    workspace: staging\n"
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": text, ".plangate.yml": config})
        gh.set_permission(repo, "bob", "write")
        dropped = main_tf(state, {"keep": "a"}, workspace_dir=workspaces)
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed in staging", {"infra/main.tf": dropped})
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
        assert "Approved by @bob" in _approve(stack, repo, pr)
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(staging) == {"terraform_data.keep"}
        assert state_addresses(state) == {"terraform_data.keep", "terraform_data.doomed"}  # default untouched


# Each call is written to a hidden file, then renamed: the test, polling, reads only complete calls.
RECORDER = """#!/bin/sh
call="$(mktemp {log}/.$(date +%s%N).XXXXXX)"
{{ printf 'ARGV'; for a in "$@"; do printf ' %s' "$a"; done; echo; env | sort | sed 's/^/ENV /'; }} > "$call"
mv "$call" "{log}/$(basename "$call" | cut -c2-)"
exec {real} "$@"
"""


def _steps(log: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(argv with job paths normalised, environment) per terraform call, in order (one file a call:
    the two `show`s run at once)."""
    steps: list[tuple[str, tuple[str, ...]]] = []
    for call in sorted(c for c in log.iterdir() if not c.name.startswith(".")):  # hidden: still being written
        first, *rest = call.read_text().strip().splitlines()
        argv = re.sub(r"\S*/run-[^/\s]+", "RUN", first.removeprefix("ARGV").strip())
        kept = (line for line in rest if not line.startswith(("ENV PWD=", "ENV TF_PLUGIN_CACHE_DIR=")))
        env = tuple(re.sub(r"/tmp/step-[0-9a-f]+", "/tmp/step", line) for line in kept)  # a step's own HOME
        steps.append((argv, env))
    return steps


def test_plan_apply_and_drift_run_one_pipeline(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = applied_state(tmp_path)
    log, bin_dir = tmp_path / "marks" / "calls", tmp_path / "bin"  # marks: writable to every sandboxed step
    bin_dir.mkdir()
    log.mkdir(parents=True)
    (bin_dir / "terraform").write_text(RECORDER.format(log=log, real=tool()))
    (bin_dir / "terraform").chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "WRITE_CREDENTIAL": "apply-only",
        "PLANGATE_TF_ENV_APPLY": "WRITE_CREDENTIAL",
    }
    with running_stack(tmp_path, redis_url, extra_env=env) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(repo, "add", "alice", "Add", {"infra/main.tf": main_tf(state, {**BASE, "new": "n"})})
        status(stack, repo, pr.head_sha, "plangate/destroy", "success")
        planned = _steps(log)
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success")
        applied = _steps(log)[len(planned) :]
        assert repo.installation_id is not None
        target = DriftTarget(
            installation_id=repo.installation_id,
            repo_id=repo.id,
            repo=repo.full_name,
            clone_url=f"{stack.env['GITHUB_API_URL']}/{repo.full_name}.git",
            default_branch="main",
            project=None,
            schedule="* * * * *",
        )
        Queue(PLANS_QUEUE, connection=redis_conn).enqueue(Jobs.DRIFT_CHECK, kwargs={"target": target})
        stack.wait_for("the drift check", lambda: len(_steps(log)) >= len(planned) + len(applied) + 3)
        drifted = _steps(log)[len(planned) + len(applied) :]
    words = [argv.split()[0] for argv, _ in planned]
    assert words == ["init", "plan", "show"]  # the plan's text is its own output: `show -json` only
    assert [a.split()[0] for a, _ in applied] == [*words, "apply"]
    # Every plan (a PR's, the merge's, a drift check's) runs in the plan phase, without the state lock and
    # with the plan's credentials: only `apply` of the checked plan takes the lock and the apply's.
    plans = [a.split()[0] for a, _ in planned + applied + drifted if "-lock=false" in a.split()]
    assert plans == ["plan", "plan", "plan"] and "-lock=false" not in applied[3][0].split()
    with_write = [
        argv.split()[0] for argv, env in planned + applied + drifted if "ENV WRITE_CREDENTIAL=apply-only" in env
    ]
    assert with_write == ["apply"]  # the merged code's init and plan never held the apply's credentials
    for one, other in ((planned, applied[:3]), (planned, drifted[:3])):
        assert sorted(one) == sorted(other)  # same argv (paths aside) and the same environment


def test_an_approval_covers_only_the_plan_its_author_could_see(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        sha_a = pr.head_sha
        status(stack, repo, sha_a, "plangate/destroy", "failure", "1 to destroy")
        next_second()
        gh.comment(repo, pr.number, "bob", "/approve-destroy", deliver=False)  # written now, delivered late
        written = gh.outbox[-1]
        next_second()
        sha_b = gh.push_pr(pr, {"infra/main.tf": main_tf(state, {})})  # now destroys keep too
        status(stack, repo, sha_b, "plangate/destroy", "failure", "2 to destroy")
        before = len(replies(stack, repo, pr.number))
        gh.redeliver(written)
        reply = answered(stack, repo, pr.number, before + 1, "the late reply")[before]
        assert "the plan changed after you commented" in reply and "plangate:approval" not in reply
        assert "Approved" not in reply
        status(stack, repo, sha_b, "plangate/destroy", "failure", "2 to destroy")

        wrong = _approve(stack, repo, pr, body=f"/approve-destroy {sha_a[:7]}")
        assert f"you approved `{sha_a[:7]}`" in wrong
        right = _approve(stack, repo, pr, body=f"/approve-destroy {sha_b[:9]}")
        assert "Approved by @bob: 2 destroys" in right
        status(stack, repo, sha_b, "plangate/destroy", "success")


def test_an_approver_who_lost_write_access_no_longer_counts_at_merge(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure")
        assert "Approved by @bob" in _approve(stack, repo, pr)
        status(stack, repo, pr.head_sha, "plangate/destroy", "success")
        gh.set_permission(repo, "bob", "read")
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        blocked = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:apply-blocked" in b]
        assert len(blocked) == 1 and "@bob no longer qualifies to approve destroys" in blocked[0]
        assert "read permission" in blocked[0]
        assert "terraform_data.doomed" in state_addresses(state)


def test_a_direct_pusher_cannot_approve_their_own_destroy(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        pushed = gh.push(repo, "main", {"infra/main.tf": main_tf(state, {"keep": "a"})}, "alice")
        status(stack, repo, pushed, "plangate/apply", "failure", "blocked")
        (issue,) = [i for i in gh.state.issues.values() if i.repo_id == repo.id]
        own = comment_and_wait(stack, repo, issue.number, "alice", "/approve-destroy")
        assert "refused" in own and "pushed this commit" in own
        assert "terraform_data.doomed" in state_addresses(state)
        other = comment_and_wait(stack, repo, issue.number, "bob", "/approve-destroy")
        assert "Approved by @bob" in other
        status(stack, repo, pushed, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep"}


def test_a_deleted_project_is_destroyed_through_the_gate(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    dns_state = tmp_path / "state" / "dns.tfstate"
    dns = main_tf(dns_state, {"a": "1", "b": "2"})
    apply_directly(tmp_path / "applied-dns", dns)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": main_tf(state, BASE), "infra/dns/main.tf": dns})
        gh.set_permission(repo, "bob", "write")
        pr = gh.open_pr(repo, "rm-dns", "alice", "Retire dns", {"infra/dns/main.tf": None})
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "2 to destroy")
        (plan,) = [b for b in bot_bodies(stack, repo, pr.number) if "plangate:plan" in b]
        assert "`terraform_data.a`" in plan and "`terraform_data.b`" in plan and "directory deleted" in plan
        merged_early = json.dumps(sorted(state_addresses(dns_state)))
        assert merged_early == '["terraform_data.a", "terraform_data.b"]'
        assert "Approved by @bob: 2 destroys" in _approve(stack, repo, pr)
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(dns_state) == set()
        assert state_addresses(state) == {"terraform_data.keep", "terraform_data.doomed"}


def test_a_merge_marks_and_replans_the_other_open_pr_on_the_same_project(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        first = gh.open_pr(repo, "x", "alice", "Add x", {"infra/main.tf": main_tf(state, {**BASE, "x": "1"})})
        status(stack, repo, first.head_sha, "plangate/destroy", "success")
        second = gh.open_pr(repo, "y", "alice", "Add y", {"infra/y.tf": 'resource "terraform_data" "y" {}\n'})
        status(stack, repo, second.head_sha, "plangate/destroy", "success")
        (comment,) = [c for c in gh.comments_on(repo, second.number) if "plangate:plan" in c.body]

        merged = gh.merge_pr(first, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success")
        assert "terraform_data.x" in state_addresses(state)

        def replanned() -> str | None:
            body = next(c.body for c in gh.comments_on(repo, second.number) if c.id == comment.id)
            return body if "this is the plan of the merge" in body else None

        body = stack.wait_for("the second PR planned on the merge", replanned)
        # Planned at its head, the second PR would now destroy x (its code lacks it); on the merge it does not.
        assert "1 to add, 0 to change, 0 to destroy" in body and "terraform_data.x" not in body
        status(stack, repo, second.head_sha, "plangate/destroy", "success", "No destroys")
        path = f"/repos/{repo.full_name}/issues/comments/{comment.id}"
        # marked stale once, from plangate's record of its own text (no read), then edited by the re-plan
        assert [r.method for r in gh.state.requests if r.path == path] == ["PATCH", "PATCH"]
        plan_jobs = [k for k in redis_conn.scan_iter("rq:job:plan-*") if b"-main-" in k]
        assert len(plan_jobs) == 1  # one re-plan of the second PR for this push; the merged PR none
