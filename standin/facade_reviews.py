"""The part of the control API where people review pull requests (`StandIn` inherits it): reviews, line
comments and replies in their threads, edits, dismissals, each with the webhook GitHub sends for it.

Who may do what is GitHub's rule (`standin.reviews`): anyone who can see the repository comments on lines (on a
public one, anyone); approving and requesting changes take write access and never come from the PR's author;
only writers dismiss, and only approvals and requests for changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from standin import payloads_reviews
from standin import reviews as rules
from standin.reviews import Review, ReviewComment
from standin.state import PullRequest, Repo, State, User


class ReviewsControl:
    if TYPE_CHECKING:  # what StandIn provides
        state: State
        base_url: str

        def add_user(self, login: str, type: str = "User") -> User: ...

        def _emit(self, event: str, payload: dict[str, Any], deliver: bool) -> None: ...

    def _pull(self, repo: Repo, pr_number: int) -> PullRequest:
        with self.state.lock:
            pr = self.state.pulls.get((repo.id, pr_number))
        if pr is None:
            raise ValueError(f"no PR #{pr_number} in {repo.full_name}")
        return pr

    def review(
        self,
        repo: Repo,
        pr_number: int,
        login: str,
        body: str = "",
        event: str = "COMMENT",
        commit_id: str | None = None,
        deliver: bool = True,
    ) -> Review:
        """`login` submits a review (event APPROVE | REQUEST_CHANGES | COMMENT) on `commit_id` (default: the PR's
        head): `pull_request_review` `submitted`. PermissionError: no write access to approve or request changes
        (or cannot see a private repository); ValueError: the PR's author approving or requesting changes, or a
        COMMENT / REQUEST_CHANGES without a body, as GitHub's 422."""
        state, user, pr = self.state, self.add_user(login), self._pull(repo, pr_number)
        made = rules.submit(state, repo, pr, user, body, event, commit_id, self.base_url)
        self._emit(
            "pull_request_review", payloads_reviews.review(state, repo, made, "submitted", user, self.base_url), deliver
        )
        return made

    def edit_review(self, review: Review, body: str, editor: str | None = None, deliver: bool = True) -> Review:
        """`editor` (default: the reviewer; else a writer) rewrites the review's body: `pull_request_review`
        `edited` with `changes.body.from`; PermissionError for anyone else."""
        state, user = self.state, self.add_user(editor or review.user.login)
        old = rules.edit(state, review, body, user)
        repo = state.repos[review.repo_id]
        payload = payloads_reviews.review(state, repo, review, "edited", user, self.base_url, old_body=old)
        self._emit("pull_request_review", payload, deliver)
        return review

    def dismiss_review(self, review: Review, by_login: str, message: str = "", deliver: bool = True) -> Review:
        """A writer dismisses an approval or a request for changes: state DISMISSED, `pull_request_review`
        `dismissed`. PermissionError for a non-writer; ValueError for a review of any other state. GitHub shows
        `message` on the PR's timeline only; no payload carries it."""
        state, user = self.state, self.add_user(by_login)
        rules.dismiss(state, review, user)
        repo = state.repos[review.repo_id]
        payload = payloads_reviews.review(state, repo, review, "dismissed", user, self.base_url)
        self._emit("pull_request_review", payload, deliver)
        return review

    def review_comment(
        self,
        repo: Repo,
        pr_number: int,
        login: str,
        body: str,
        path: str = "infra/main.tf",
        line: int = 1,
        commit_id: str | None = None,
        in_reply_to: ReviewComment | None = None,
        deliver: bool = True,
    ) -> ReviewComment:
        """`login` comments on `path` line `line` of `commit_id` (default: the PR's head), or, with `in_reply_to`,
        replies in that comment's thread (then `in_reply_to_id` is the thread's first comment, and its path, line
        and commit are the reply's). Like GitHub, the comment comes in a review of its own (COMMENTED, empty
        body): `pull_request_review_comment` `created`, then `pull_request_review` `submitted`.
        PermissionError: the repository is private and `login` has no role on it; LookupError: `in_reply_to` is
        deleted or on another PR."""
        state, user, pr = self.state, self.add_user(login), self._pull(repo, pr_number)
        at = in_reply_to or (path, line, commit_id or pr.head_sha)
        made, around = rules.comment(state, repo, pr, user, body, at, self.base_url)
        base = self.base_url
        self._emit(
            "pull_request_review_comment",
            payloads_reviews.review_comment(state, repo, made, "created", user, base),
            deliver,
        )
        self._emit(
            "pull_request_review", payloads_reviews.review(state, repo, around, "submitted", user, base), deliver
        )
        return made

    def edit_review_comment(
        self, comment: ReviewComment, body: str, editor: str | None = None, deliver: bool = True
    ) -> ReviewComment:
        """`editor` (default: the author; else a writer) rewrites the comment: `pull_request_review_comment`
        `edited` with `changes.body.from`; the edit is kept on `comment.edits` and bumps `updated_at`."""
        state, user = self.state, self.add_user(editor or comment.user.login)
        old = rules.edit(state, comment, body, user)
        repo = state.repos[comment.repo_id]
        payload = payloads_reviews.review_comment(state, repo, comment, "edited", user, self.base_url, old_body=old)
        self._emit("pull_request_review_comment", payload, deliver)
        return comment

    def delete_review_comment(self, comment: ReviewComment, deleter: str | None = None, deliver: bool = True) -> None:
        """`deleter` (default: the author; else a writer) deletes it: `pull_request_review_comment` `deleted`."""
        state, user = self.state, self.add_user(deleter or comment.user.login)
        rules.delete(state, comment, user)
        repo = state.repos[comment.repo_id]
        payload = payloads_reviews.review_comment(state, repo, comment, "deleted", user, self.base_url)
        self._emit("pull_request_review_comment", payload, deliver)

    def reviews(self, repo: Repo, pr_number: int) -> list[Review]:
        """The PR's reviews, oldest first (the implicit ones around single comments included)."""
        with self.state.lock:
            found = [r for r in self.state.reviews.values() if (r.repo_id, r.number) == (repo.id, pr_number)]
        return sorted(found, key=lambda r: r.id)

    def review_comments(self, repo: Repo, pr_number: int) -> list[ReviewComment]:
        """The PR's review comments not deleted, oldest first."""
        with self.state.lock:
            found = [c for c in self.state.review_comments.values() if (c.repo_id, c.number) == (repo.id, pr_number)]
        return sorted(found, key=lambda c: c.id)
