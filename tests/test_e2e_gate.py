"""The destroy gate end to end: who may approve, what an approval covers, and what survives a Redis wipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from standin.stack import Stack, running_stack
from tests.e2e import applied_state, comment_and_wait_closed, infra_repo, replies, status
from tests.tfproject import main_tf

pytestmark = pytest.mark.e2e


def _destroy_posts(stack: Stack, sha: str) -> int:
    """Reports written on `sha` (check run writes, or plangate/destroy statuses): grows with each re-plan."""
    runs = sum(1 for r in stack.gh.state.requests if r.method in ("POST", "PATCH") and "/check-runs" in r.path)
    return runs + sum(1 for s in stack.gh.state.statuses if s.sha == sha and s.context == "plangate/destroy")


def test_approvals_are_scoped_checked_and_durable(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = infra_repo(stack, state)
        gh.set_permission(repo, "reader", "read")
        gh.add_user("renovate[bot]", type="Bot")
        gh.set_permission(repo, "renovate[bot]", "admin")

        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        sha1 = pr.head_sha
        assert "1 to destroy" in status(stack, repo, sha1, "plangate/destroy", "failure")

        reply, reactions = comment_and_wait_closed(stack, repo, pr.number, "reader", "/approve-destroy")
        assert "@reader /approve-destroy refused" in reply and "read permission" in reply
        assert reactions == ["eyes", "-1"]
        reply, _ = comment_and_wait_closed(stack, repo, pr.number, "alice", "/approve-destroy")
        assert "opened this pull request" in reply
        reply, _ = comment_and_wait_closed(stack, repo, pr.number, "stranger", "/approve-destroy")
        assert "not a collaborator" in reply
        reply, _ = comment_and_wait_closed(stack, repo, pr.number, "stranger", "/help")
        assert "Who may approve destroys here" in reply and "`infra`" in reply
        reply, reactions = comment_and_wait_closed(stack, repo, pr.number, "bob", "/aprove-destroy")
        assert "did you mean /approve-destroy" in reply and reactions == ["eyes", "confused"]

        silent = [
            gh.comment(repo, pr.number, "renovate[bot]", "/approve-destroy"),
            gh.comment(repo, pr.number, "bob", "> /approve-destroy"),
            gh.comment(repo, pr.number, "bob", "I think we should /approve-destroy this"),
        ]
        edited = gh.comment(repo, pr.number, "bob", "looks fine")
        gh.edit_comment(edited, "/approve-destroy")
        silent.append(edited)
        assert gh.reports(repo, sha1)["plangate/destroy"].state == "failure"

        reply, reactions = comment_and_wait_closed(stack, repo, pr.number, "bob", "/approve-destroy")
        assert "Approved by @bob: 1 destroy" in reply and "`terraform_data.doomed`" in reply
        assert reactions == ["eyes", "+1"]
        assert "approved by @bob" in status(stack, repo, sha1, "plangate/destroy", "success")
        for comment in silent:  # nothing answered the non-commands, not even a reaction
            assert gh.reactions_on(comment) == []
        assert sum(1 for r in replies(stack, repo, pr.number) if "plangate:approval" in r) == 1

        # Redis is only a cache: after a wipe, the approval is rebuilt from the bot's reply marker.
        redis_conn.flushdb()
        posted = _destroy_posts(stack, sha1)
        comment_and_wait_closed(stack, repo, pr.number, "bob", "/plan")
        stack.wait_for("the re-plan's gate status", lambda: _destroy_posts(stack, sha1) > posted)
        assert "approved by @bob" in status(stack, repo, sha1, "plangate/destroy", "success")

        # A new push voids the approval: the new plan needs its own.
        sha2 = gh.push_pr(pr, {"infra/main.tf": main_tf(state, {"keep": "a2"})})
        assert "1 to destroy" in status(stack, repo, sha2, "plangate/destroy", "failure")

        # A marker forged by a human never counts, even when the cache is gone.
        forged = {
            "v": 2,
            "approver": "mallory",
            "sha": sha2,
            "projects": ["infra@default:infra"],
            "addresses": {"infra@default:infra": ["terraform_data.doomed"]},
        }
        gh.comment(repo, pr.number, "mallory", f"<!-- plangate:approval {json.dumps(forged)} -->\nlgtm")
        redis_conn.flushdb()
        posted = _destroy_posts(stack, sha2)
        comment_and_wait_closed(stack, repo, pr.number, "bob", "/plan")
        stack.wait_for("the re-plan's gate status", lambda: _destroy_posts(stack, sha2) > posted)
        assert "1 to destroy" in status(stack, repo, sha2, "plangate/destroy", "failure")
        stack.wait_for(
            "the blocked decision", lambda: int(redis_conn.hget("plangate:metrics:gate-decisions", "blocked") or 0)
        )
