"""Commands where reviewers work, end to end: a review's body and a review thread carry `/approve-destroy`
and `/plan` with the same judgement as the conversation, and are answered where they were written.

Stand-in GitHub (reviews, review comments, dismissals, who may do what), real Redis, real worker
processes, real terraform.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import applied_state, bot_bodies, infra_repo, next_second, planned, status
from tests.tfproject import apply_directly, main_tf, state_addresses

pytestmark = pytest.mark.e2e


def _thread_replies(stack: Stack, repo: Repo, number: int, thread: int) -> list[str]:
    """The App's replies in the review thread that starts with comment `thread`."""
    return [
        c.body
        for c in stack.gh.review_comments(repo, number)
        if c.in_reply_to_id == thread and c.user.login == "plangate[bot]"
    ]


def _answer_in_thread(stack: Stack, repo: Repo, number: int, thread: int, what: str) -> str:
    return stack.wait_for(
        f"the answer in thread {thread}",
        lambda: next((b for b in _thread_replies(stack, repo, number, thread) if what in b), None),
    )


def _conversation_answer(stack: Stack, repo: Repo, number: int, what: str) -> str:
    return stack.wait_for(
        f"an answer saying {what!r}", lambda: next((b for b in bot_bodies(stack, repo, number) if what in b), None)
    )


def test_a_writers_review_approves_and_the_merge_applies(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        planned(stack, repo, pr.head_sha)
        next_second()  # approvals come after the plan they approve went out
        review = stack.gh.review(repo, pr.number, "bob", "/approve-destroy", event="APPROVE")
        answer = _conversation_answer(stack, repo, pr.number, "Approved by @bob")
        assert f"In reply to @bob's [review]({review.html_url})" in answer
        assert sum("Approved by @bob" in b for b in bot_bodies(stack, repo, pr.number)) == 1  # one approval
        status(stack, repo, pr.head_sha, "plangate/destroy", "success")
        merged = stack.gh.merge_pr(pr, method="merge")
        status(stack, repo, merged, "plangate/apply", "success")
        assert state_addresses(state) == {"terraform_data.keep"}


def test_a_line_comment_approves_its_project_only_and_is_answered_in_its_thread(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    dns_state = tmp_path / "state" / "dns.tfstate"
    apply_directly(tmp_path / "applied-dns", main_tf(dns_state, {"keep": "a", "doomed": "b"}))
    with running_stack(tmp_path, redis_url) as stack:
        repo = infra_repo(stack, state, also={"dns/main.tf": main_tf(dns_state, {"keep": "a", "doomed": "b"})})
        files = {"infra/main.tf": main_tf(state, {"keep": "a"}), "dns/main.tf": main_tf(dns_state, {"keep": "a"})}
        pr = stack.gh.open_pr(repo, "both", "alice", "Both", files)
        planned(stack, repo, pr.head_sha)
        next_second()
        line = stack.gh.review_comment(repo, pr.number, "bob", "/approve-destroy infra", path="infra/main.tf")
        answer = _answer_in_thread(stack, repo, pr.number, line.id, "Approved by @bob")
        assert "Still not approved" in answer and "1 destroy in dns" in answer
        assert stack.gh.reports(repo, pr.head_sha)["plangate/destroy"].state == "failure"  # dns is still open
        assert not any("Approved by @bob" in b for b in bot_bodies(stack, repo, pr.number))  # not in the conversation


def test_authors_pushers_and_readers_are_refused_in_reviews_as_in_comments(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        repo = infra_repo(stack, state)
        stack.gh.set_permission(repo, "carol", "read")
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        pushed = stack.gh.push_pr(pr, {"infra/extra.tf": "# more\n"}, pusher="bob")
        planned(stack, repo, pushed)
        next_second()
        stack.gh.review(repo, pr.number, "alice", "/approve-destroy")  # the opener: a COMMENT review
        _conversation_answer(stack, repo, pr.number, "@alice /approve-destroy refused")
        line = stack.gh.review_comment(repo, pr.number, "bob", "/approve-destroy")  # pushed onto the PR
        assert "refused" in _answer_in_thread(stack, repo, pr.number, line.id, "@bob /approve-destroy refused")
        reader = stack.gh.review_comment(repo, pr.number, "carol", "/approve-destroy")  # a reader may comment
        assert "refused" in _answer_in_thread(stack, repo, pr.number, reader.id, "@carol /approve-destroy refused")
        assert stack.gh.reports(repo, pushed)["plangate/destroy"].state != "success"


def test_a_dismissed_review_reopens_the_gate_and_edits_and_old_commits_approve_nothing(
    tmp_path: Path, redis_url: str
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        repo = infra_repo(stack, state)
        stack.gh.set_permission(repo, "dave", "write")
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        first = pr.head_sha
        planned(stack, repo, first)
        next_second()
        review = stack.gh.review(repo, pr.number, "bob", "/approve-destroy", event="APPROVE")
        status(stack, repo, first, "plangate/destroy", "success")
        stack.gh.dismiss_review(review, "dave", message="not yet")
        said = _conversation_answer(stack, repo, pr.number, "@dave dismissed @bob's review")
        assert "no longer counts" in said
        status(stack, repo, first, "plangate/destroy", "failure")

        quiet = stack.gh.review(repo, pr.number, "bob", "Looks fine")
        stack.gh.edit_review(quiet, "/approve-destroy")  # an edited review is never a command
        second = stack.gh.push_pr(pr, {"infra/extra.tf": "# more\n"}, pusher="alice")
        planned(stack, repo, second)
        next_second()
        stack.gh.review(repo, pr.number, "bob", "/approve-destroy", event="APPROVE", commit_id=first)
        said = _conversation_answer(stack, repo, pr.number, f"this review is on {first[:7]}")
        assert "approves nothing" in said
        assert stack.gh.reports(repo, second)["plangate/destroy"].state == "failure"
        assert sum("Approved by @bob" in b for b in bot_bodies(stack, repo, pr.number)) == 1  # the dismissed one


def test_plan_in_a_review_thread_plans_again(tmp_path: Path, redis_url: str) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        repo = infra_repo(stack, state)
        pr = stack.gh.open_pr(repo, "drop", "alice", "Drop", {"infra/main.tf": main_tf(state, {"keep": "a"})})
        planned(stack, repo, pr.head_sha)
        before = len(stack.gh.state.requests)
        line = stack.gh.review_comment(repo, pr.number, "bob", "/plan")
        assert "/plan: planning" in _answer_in_thread(stack, repo, pr.number, line.id, "/plan: planning")
        stack.wait_for(
            "the plan comment edited again",
            lambda: (
                any(
                    r.method == "PATCH" and "/issues/comments/" in r.path
                    for r in list(stack.gh.state.requests)[before:]
                )
                or None
            ),
        )
