"""Check runs and the merge queue end to end: the Approve destroys button, Re-run, merge groups.

Stand-in GitHub (Checks API, check_run and merge_group events), real Redis, real workers, real terraform.
"""

from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path

import pytest

from standin.stack import Stack, running_stack
from standin.state import CheckRun, PullRequest, Repo
from tests.e2e import answered, applied_state, replies, status
from tests.tfproject import main_tf

pytestmark = pytest.mark.e2e


def _press(stack: Stack, repo: Repo, pr: PullRequest, login: str, run: CheckRun | None = None) -> str:
    """`login` presses "Approve destroys" on plangate/destroy (the run as it is now, or as `run` showed
    it: a page left open); plangate's reply on the PR."""
    before = len(replies(stack, repo, pr.number))
    run = run or stack.gh.check_runs(repo, pr.head_sha)["plangate/destroy"]
    (identifier,) = [a["identifier"] for a in run.actions]
    stack.gh.request_check_run_action(run, login, identifier)
    return answered(stack, repo, pr.number, before + 1, f"the reply to {login}'s press")[before]


def test_the_approve_button_and_re_run(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"})})
        gh.set_permission(repo, "bob", "write")
        gh.set_permission(repo, "reader", "read")
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        status(stack, repo, pr.head_sha, "plangate/destroy", "failure", "1 to destroy")
        run = gh.check_runs(repo, pr.head_sha)["plangate/destroy"]
        (identifier,) = [a["identifier"] for a in run.actions]
        assert run.conclusion == "action_required" and re.fullmatch(r"approve-[0-9a-f]{12}", identifier)
        assert run.summary and "`terraform_data.doomed`" in run.summary
        stale = replace(run, actions=[{**run.actions[0], "identifier": "approve-000000000000"}])
        assert "changed since the page you pressed the button on" in _press(stack, repo, pr, "bob", stale)

        assert "opened this pull request" in _press(stack, repo, pr, "alice")
        assert "read permission" in _press(stack, repo, pr, "reader")
        assert gh.check_runs(repo, pr.head_sha)["plangate/destroy"].conclusion == "action_required"
        reply = _press(stack, repo, pr, "bob")
        assert reply.startswith("<!-- plangate:approval ") and "Approved by @bob: 1 destroy" in reply
        status(stack, repo, pr.head_sha, "plangate/destroy", "success", "approved by @bob")
        assert gh.check_runs(repo, pr.head_sha)["plangate/destroy"].actions == []

        plan = gh.check_runs(repo, pr.head_sha)["plangate/plan"]
        comments = [c for c in gh.comments_on(repo, pr.number) if "plangate:plan " in c.body]
        edits_before = sum(
            1 for r in gh.state.requests if r.method == "PATCH" and r.path.endswith(f"/{comments[0].id}")
        )
        gh.rerequest_check_run(plan, "bob")

        def replanned() -> int | None:
            edits = sum(1 for r in gh.state.requests if r.method == "PATCH" and r.path.endswith(f"/{comments[0].id}"))
            return edits if edits > edits_before else None

        stack.wait_for("the re-plan", replanned)
        status(stack, repo, pr.head_sha, "plangate/destroy", "success", "approved by @bob")
        assert len([c for c in gh.comments_on(repo, pr.number) if "plangate:plan " in c.body]) == 1
        time.sleep(2)  # whatever else the press started has run by now
        assert replanned() == edits_before + 1  # re-planned exactly once
        gh.rerequest_check_run(gh.check_runs(repo, pr.head_sha)["plangate/plan"], "bob")
        stack.wait_for("the second re-plan", lambda: (replanned() or 0) >= edits_before + 2)  # each press counts


def test_merge_groups_pass_only_with_every_destroy_approved_on_their_prs(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path, {"keep": "a", "doomed": "b"})  # as main.tf + doomed.tf below say
    doomed = 'resource "terraform_data" "doomed" {\n  input = "b"\n}\n'
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        files = {"infra/main.tf": main_tf(state, {"keep": "a"}), "infra/doomed.tf": doomed}
        repo = gh.create_repo("acme", "infra", files)
        gh.set_permission(repo, "bob", "write")
        approved = gh.open_pr(repo, "drop-doomed", "alice", "Drop doomed", {"infra/doomed.tf": None})
        status(stack, repo, approved.head_sha, "plangate/destroy", "failure")
        assert "Approved by @bob" in _press(stack, repo, approved, "bob")
        unapproved = gh.open_pr(repo, "drop-keep", "alice", "Drop keep", {"infra/main.tf": main_tf(state, {})})
        status(stack, repo, unapproved.head_sha, "plangate/destroy", "failure")

        alone = gh.queue_merge_group(repo, [approved])
        status(stack, repo, alone.head_sha, "plangate/destroy", "success")
        gh.merge_group_done(alone, "dequeued")
        both = gh.queue_merge_group(repo, [approved, unapproved])
        assert "2 to destroy (1 approved)" in status(stack, repo, both.head_sha, "plangate/destroy", "failure")
        gh.merge_group_done(both, "invalidated")
        lone = gh.queue_merge_group(repo, [unapproved])
        status(stack, repo, lone.head_sha, "plangate/destroy", "failure", "1 to destroy")
