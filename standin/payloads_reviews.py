"""`pull_request_review` and `pull_request_review_comment` webhooks, shaped like GitHub's published examples
(tests/fixtures/github/webhooks/pull_request_review*.json), built from live state."""

from __future__ import annotations

from standin import payloads, pulls, review_shapes
from standin.reviews import Review, ReviewComment
from standin.shapes import Json
from standin.state import Repo, State, User


def _changes(action: str, old_body: str | None) -> Json:
    return {"changes": {"body": {"from": old_body}}} if action == "edited" else {}


def review(
    state: State, repo: Repo, r: Review, action: str, sender: User, base: str, old_body: str | None = None
) -> Json:
    """submitted / edited (with `changes.body.from`) / dismissed."""
    pr = state.pulls[(repo.id, r.number)]
    return {
        "action": action,
        **_changes(action, old_body),
        "review": review_shapes.review(r, repo, base, webhook=True),
        "pull_request": pulls.pull_json(state, repo, pr, base),
        **payloads._common(state, repo, sender, base),
    }


def review_comment(
    state: State, repo: Repo, c: ReviewComment, action: str, sender: User, base: str, old_body: str | None = None
) -> Json:
    """created / edited (with `changes.body.from`) / deleted."""
    pr = state.pulls[(repo.id, c.number)]
    return {
        "action": action,
        **_changes(action, old_body),
        "comment": review_shapes.review_comment(c, repo, state, base),
        "pull_request": pulls.pull_json(state, repo, pr, base),
        **payloads._common(state, repo, sender, base),
    }
