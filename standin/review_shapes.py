"""GitHub's JSON for reviews and review comments: REST answers and the objects inside their webhooks.

The two differ where GitHub's do: a webhook's review has its state in lower case ("approved") and a null body
when it has none; REST says "APPROVED" and "". A comment that starts a thread has no `in_reply_to_id` at all.
"""

from __future__ import annotations

from standin import gitops, shapes
from standin.reviews import Review, ReviewComment
from standin.rollups import reactions
from standin.shapes import Json
from standin.state import Repo, State, iso


def review(r: Review, repo: Repo, base: str, webhook: bool = False) -> Json:
    pull_url = f"{base}/repos/{repo.full_name}/pulls/{r.number}"
    return {
        "id": r.id,
        "node_id": shapes.node_id("PullRequestReview", r.id),
        "user": shapes.user(r.user, base),
        "body": (r.body or None) if webhook else r.body,
        "commit_id": r.commit_id,
        "submitted_at": iso(r.submitted_at),
        "state": r.state.lower() if webhook else r.state,
        "html_url": r.html_url,
        "pull_request_url": pull_url,
        "author_association": "NONE",
        "_links": {"html": {"href": r.html_url}, "pull_request": {"href": pull_url}},
    }


def diff_position(repo: Repo, base_sha: str, commit_id: str, path: str, line: int) -> tuple[str, int] | None:
    """The diff hunk up to `line` of `path` at `commit_id`, and the line's `position` (lines below the file's
    first `@@`); None when the PR's diff does not show that line."""
    try:
        lines = gitops.git(repo.path, "diff", "--no-color", f"{base_sha}...{commit_id}", "--", path).splitlines()
    except gitops.GitError:
        return None
    first = next((i for i, text in enumerate(lines) if text.startswith("@@")), None)
    if first is None:
        return None
    new_line, start = 0, first
    for i in range(first, len(lines)):
        text = lines[i]
        if text.startswith("@@"):  # @@ -a,b +c,d @@: the hunk's first line on the new side is c
            start, new_line = i, int(text.split("+", 1)[1].split(",", 1)[0].split(" ", 1)[0]) - 1
        elif not text.startswith(("-", "\\")):  # not a removed line, nor "\\ No newline at end of file"
            new_line += 1
            if new_line == line:
                return "\n".join(lines[start : i + 1]), i - first
    return None


def review_comment(c: ReviewComment, repo: Repo, state: State, base: str) -> Json:
    api = f"{base}/repos/{repo.full_name}/pulls/comments/{c.id}"
    pull_url = f"{base}/repos/{repo.full_name}/pulls/{c.number}"
    pr = state.pulls[(c.repo_id, c.number)]
    hunk, position = diff_position(repo, pr.base_sha, c.commit_id, c.path, c.line) or (
        f"@@ -{c.line},1 +{c.line},1 @@",
        1,
    )
    out: Json = {
        "url": api,
        "pull_request_review_id": c.pull_request_review_id,
        "id": c.id,
        "node_id": shapes.node_id("PullRequestReviewComment", c.id),
        "diff_hunk": hunk,
        "path": c.path,
        "position": position,
        "original_position": position,
        "commit_id": c.commit_id,
        "original_commit_id": c.commit_id,
        "user": shapes.user(c.user, base),
        "body": c.body,
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "html_url": c.html_url,
        "pull_request_url": pull_url,
        "author_association": "NONE",
        "_links": {"self": {"href": api}, "html": {"href": c.html_url}, "pull_request": {"href": pull_url}},
        "reactions": reactions(f"{api}/reactions", (x.content for x in state.reactions if x.comment_id == c.id)),
        "start_line": None,
        "original_start_line": None,
        "start_side": None,
        "line": c.line,
        "original_line": c.line,
        "side": "RIGHT",
        "subject_type": "line",
    }
    if c.in_reply_to_id is not None:
        out["in_reply_to_id"] = c.in_reply_to_id
    return out
