"""The destroy gate end to end: who may approve, what an approval covers, and what survives a Redis wipe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from standin.stack import Stack, running_stack
from standin.state import PullRequest, Repo
from tests.e2e import next_second
from tests.tfproject import apply_directly, main_tf

pytestmark = pytest.mark.e2e
BOT = "plangate[bot]"


def _destroy(stack: Stack, repo: Repo, sha: str) -> tuple[str, str] | None:
    status = stack.gh.reports(repo, sha).get("plangate/destroy")
    return (status.state, status.description or "") if status else None


def _replies(stack: Stack, repo: Repo, pr: PullRequest) -> list[str]:
    return [
        c.body for c in stack.gh.comments_on(repo, pr.number) if c.user.login == BOT and "plangate:plan" not in c.body
    ]


def _answered(stack: Stack, repo: Repo, pr: PullRequest, count: int) -> list[str]:
    def probe() -> list[str] | None:
        replies = _replies(stack, repo, pr)
        return replies if len(replies) >= count else None

    return stack.wait_for(f"{count} replies", probe)


def _comment_and_wait(stack: Stack, repo: Repo, pr: PullRequest, login: str, body: str) -> tuple[str, list[str]]:
    before = len(_replies(stack, repo, pr))
    if body.startswith("/approve-destroy"):
        next_second()
    comment = stack.gh.comment(repo, pr.number, login, body)
    reply = _answered(stack, repo, pr, before + 1)[before]

    def closed() -> list[str] | None:
        reactions = stack.gh.reactions_on(comment)
        return reactions if len(reactions) >= 2 else None

    return reply, stack.wait_for("the closing reaction", closed)


def _destroy_posts(stack: Stack, sha: str) -> int:
    """Reports written on `sha` (check run writes, or plangate/destroy statuses): grows with each re-plan."""
    runs = sum(1 for r in stack.gh.state.requests if r.method in ("POST", "PATCH") and "/check-runs" in r.path)
    return runs + sum(1 for s in stack.gh.state.statuses if s.sha == sha and s.context == "plangate/destroy")


def _wait_status(stack: Stack, repo: Repo, sha: str, state: str, contains: str = "") -> str:
    def probe() -> str | None:
        found = _destroy(stack, repo, sha)
        return found[1] if found and found[0] == state and contains in found[1] else None

    return stack.wait_for(f"plangate/destroy {state} on {sha[:7]}", probe)


def test_approvals_are_scoped_checked_and_durable(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = tmp_path / "state" / "terraform.tfstate"
    base = main_tf(state, {"keep": "a", "doomed": "b"})
    apply_directly(tmp_path / "applied", base)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": base})
        gh.set_permission(repo, "alice", "write")
        gh.set_permission(repo, "bob", "write")
        gh.set_permission(repo, "reader", "read")
        gh.add_user("renovate[bot]", type="Bot")
        gh.set_permission(repo, "renovate[bot]", "admin")

        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        sha1 = pr.head_sha
        assert "1 to destroy" in _wait_status(stack, repo, sha1, "failure")

        reply, reactions = _comment_and_wait(stack, repo, pr, "reader", "/approve-destroy")
        assert "@reader /approve-destroy refused" in reply and "read permission" in reply
        assert reactions == ["eyes", "-1"]
        reply, _ = _comment_and_wait(stack, repo, pr, "alice", "/approve-destroy")
        assert "opened this pull request" in reply
        reply, _ = _comment_and_wait(stack, repo, pr, "stranger", "/approve-destroy")
        assert "not a collaborator" in reply
        reply, _ = _comment_and_wait(stack, repo, pr, "stranger", "/help")
        assert "Who may approve destroys here" in reply and "`infra`" in reply
        reply, reactions = _comment_and_wait(stack, repo, pr, "bob", "/aprove-destroy")
        assert "did you mean /approve-destroy" in reply and reactions == ["eyes", "confused"]

        silent = [
            gh.comment(repo, pr.number, "renovate[bot]", "/approve-destroy"),
            gh.comment(repo, pr.number, "bob", "> /approve-destroy"),
            gh.comment(repo, pr.number, "bob", "I think we should /approve-destroy this"),
        ]
        edited = gh.comment(repo, pr.number, "bob", "looks fine")
        gh.edit_comment(edited, "/approve-destroy")
        silent.append(edited)
        assert _destroy(stack, repo, sha1) == ("failure", _destroy(stack, repo, sha1)[1])  # type: ignore[index]

        reply, reactions = _comment_and_wait(stack, repo, pr, "bob", "/approve-destroy")
        assert "Approved by @bob: 1 destroy" in reply and "`terraform_data.doomed`" in reply
        assert reactions == ["eyes", "+1"]
        assert "approved by @bob" in _wait_status(stack, repo, sha1, "success")
        for comment in silent:  # nothing answered the non-commands, not even a reaction
            assert gh.reactions_on(comment) == []
        assert sum(1 for r in _replies(stack, repo, pr) if "plangate:approval" in r) == 1

        # Redis is only a cache: after a wipe, the approval is rebuilt from the bot's reply marker.
        redis_conn.flushdb()
        posted = _destroy_posts(stack, sha1)
        _comment_and_wait(stack, repo, pr, "bob", "/plan")
        stack.wait_for("the re-plan's gate status", lambda: _destroy_posts(stack, sha1) > posted)
        assert "approved by @bob" in _wait_status(stack, repo, sha1, "success")

        # A new push voids the approval: the new plan needs its own.
        sha2 = gh.push_pr(pr, {"infra/main.tf": main_tf(state, {"keep": "a2"})})
        assert "1 to destroy" in _wait_status(stack, repo, sha2, "failure")

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
        _comment_and_wait(stack, repo, pr, "bob", "/plan")
        stack.wait_for("the re-plan's gate status", lambda: _destroy_posts(stack, sha2) > posted)
        assert "1 to destroy" in _wait_status(stack, repo, sha2, "failure")
        stack.wait_for(
            "the blocked decision", lambda: int(redis_conn.hget("plangate:metrics:gate-decisions", "blocked") or 0)
        )
