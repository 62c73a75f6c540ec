"""Pull-request reviews and review comments, and GitHub's rules for who may do what with them.

Shared by the REST routes (the App, acting with its installation's `pull_requests` permission) and the control
API (people, acting with their role on the repository). A rule broken raises PermissionError (GitHub's 403, or the
422 a non-writer's approval gets here) or ValueError (GitHub's 422, its message as GitHub words it).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from standin.state import WRITERS, CommentEdit, PullRequest, Repo, State, User, utcnow

EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}
OWN_PR = {
    "APPROVE": "Can not approve your own pull request",
    "REQUEST_CHANGES": "Can not request changes on your own pull request",
}


@dataclass
class Review:
    id: int
    repo_id: int
    number: int  # the pull request's
    user: User
    body: str
    state: str  # APPROVED | COMMENTED | CHANGES_REQUESTED | DISMISSED
    commit_id: str
    submitted_at: dt.datetime
    html_url: str
    edits: list[CommentEdit] = field(default_factory=list)  # oldest first


@dataclass
class ReviewComment:
    id: int
    repo_id: int
    number: int  # the pull request's
    user: User
    body: str
    path: str
    line: int
    commit_id: str
    created_at: dt.datetime
    updated_at: dt.datetime
    html_url: str
    pull_request_review_id: int
    in_reply_to_id: int | None = None  # the thread's first comment; None for that comment itself
    edits: list[CommentEdit] = field(default_factory=list)  # oldest first
    deletion: CommentEdit | None = None  # set once deleted


def may_write(state: State, repo: Repo, user: User) -> bool:
    """Write access: a collaborator with write, maintain or admin; the App when its installation may write PRs."""
    if user.login == state.app.bot.login:
        if repo.installation_id is None:
            return False
        return state.installations[repo.installation_id].permissions.get("pull_requests") == "write"
    return state.permission(repo, user.login) in WRITERS


def may_read(state: State, repo: Repo, user: User) -> bool:
    """Anyone may comment on a public repository's PR; a private one's needs a role on it (or the App)."""
    return not repo.private or user.login == state.app.bot.login or state.permission(repo, user.login) is not None


def _html(repo: Repo, pr: PullRequest, anchor: str, base: str) -> str:
    return f"{base}/{repo.full_name}/pull/{pr.number}#{anchor}"


def submit(
    state: State, repo: Repo, pr: PullRequest, user: User, body: str, event: str, commit_id: str | None, base: str
) -> Review:
    """A submitted review; APPROVE and REQUEST_CHANGES need write access and may not be the PR author's."""
    if event not in EVENTS:
        raise ValueError(f"event must be one of {list(EVENTS)}, got {event!r}")
    if not may_read(state, repo, user):
        raise PermissionError(f"{user.login} cannot see {repo.full_name}")
    if event != "APPROVE" and not body:
        raise ValueError(f"Review Can not {'comment' if event == 'COMMENT' else 'request changes'} without a body")
    if event in OWN_PR and user.login == pr.author.login:
        raise ValueError(OWN_PR[event])
    if event in OWN_PR and not may_write(state, repo, user):
        raise PermissionError(f"{user.login} has no write access to {repo.full_name}: cannot {event.lower()}")
    return _record(state, repo, pr, user, body, EVENTS[event], commit_id or pr.head_sha, base)


def comment(
    state: State,
    repo: Repo,
    pr: PullRequest,
    user: User,
    body: str,
    at: tuple[str, int, str] | ReviewComment,
    base: str,
) -> tuple[ReviewComment, Review]:
    """A single review comment `at` (path, line, commit), or a reply in the thread of the review comment `at`
    (then on the thread's path, line and commit); like GitHub, each comes inside a review of its own:
    COMMENTED, with an empty body."""
    if not may_read(state, repo, user):
        raise PermissionError(f"{user.login} cannot see {repo.full_name}")
    with state.lock:
        if isinstance(at, ReviewComment):
            root = state.review_comments.get(at.in_reply_to_id or at.id)
            if root is None or at.deletion is not None or (root.repo_id, root.number) != (repo.id, pr.number):
                raise LookupError(f"no review comment {at.id} on {repo.full_name}#{pr.number}")
            where = (root.path, root.line, root.commit_id)
        else:
            root, where = None, at
        review = _record(state, repo, pr, user, "", "COMMENTED", where[2], base)
        ident, now = state.next_id(), utcnow()
        path, line, commit_id = where
        made = ReviewComment(
            ident,
            repo.id,
            pr.number,
            user,
            body,
            path,
            line,
            commit_id,
            now,
            now,
            _html(repo, pr, f"discussion_r{ident}", base),
            review.id,
            root.id if root is not None else None,
        )
        state.review_comments[made.id] = made
        return made, review


def _record(
    state: State, repo: Repo, pr: PullRequest, user: User, body: str, status: str, commit_id: str, base: str
) -> Review:
    with state.lock:
        ident = state.next_id()
        html = _html(repo, pr, f"pullrequestreview-{ident}", base)
        review = Review(ident, repo.id, pr.number, user, body, status, commit_id, utcnow(), html)
        state.reviews[review.id] = review
        pr.updated_at = review.submitted_at
        return review


def may_change(state: State, repo: Repo, author: User, user: User) -> bool:
    """A review's or review comment's author, or anyone with write access (the App with `pull_requests: write`)."""
    return user.login == author.login or may_write(state, repo, user)


def edit(state: State, item: Review | ReviewComment, body: str, editor: User) -> str:
    """Change the body (a comment's `updated_at` too), keep who did it; returns the old body (the webhook's
    `changes.body.from`)."""
    with state.lock:
        if isinstance(item, ReviewComment) and item.deletion is not None:
            raise ValueError(f"review comment {item.id} was deleted")
        if not may_change(state, state.repos[item.repo_id], item.user, editor):
            raise PermissionError(f"{editor.login} may not edit {item.id}: only its author and writers may")
        old, now = item.body, utcnow()
        item.edits.append(CommentEdit(editor, now, old))
        item.body = body
        if isinstance(item, ReviewComment):
            item.updated_at = now
        return old


def delete(state: State, item: ReviewComment, deleter: User) -> None:
    with state.lock:
        if item.deletion is not None:
            raise ValueError(f"review comment {item.id} was deleted")
        if not may_change(state, state.repos[item.repo_id], item.user, deleter):
            raise PermissionError(f"{deleter.login} may not delete {item.id}: only its author and writers may")
        item.deletion = CommentEdit(deleter, utcnow(), item.body)
        state.review_comments.pop(item.id, None)


def dismiss(state: State, review: Review, by: User) -> None:
    """Only writers dismiss, and only an approval or a request for changes (GitHub's 422 otherwise)."""
    with state.lock:
        if not may_write(state, state.repos[review.repo_id], by):
            raise PermissionError(f"{by.login} has no write access: cannot dismiss review {review.id}")
        if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
            raise ValueError(f"Can not dismiss a {review.state.lower()} pull request review")
        review.state = "DISMISSED"
