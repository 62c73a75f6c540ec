"""GitHub's record of who changed which branch ("List repository activities"): every branch the stand-in
creates, moves or deletes goes through `move` or `delete` here, so the record is whole.

GitHub keeps this record whatever a branch's commits later say: a force push can take a commit out of a
PR, but not the push that brought it.
"""

from __future__ import annotations

from standin import gitops, shapes
from standin.payloads import ZERO_SHA
from standin.shapes import Json
from standin.state import Activity, Repo, State, User, iso, utcnow

TYPES = ("push", "force_push", "branch_creation", "branch_deletion", "pr_merge", "merge_queue_merge")


def _record(
    state: State, repo: Repo, branch: str, before: str | None, after: str | None, actor: User | None, kind: str
) -> None:
    """Keep one branch change; `move` and `delete` call it once the ref has changed."""
    with state.lock:
        item = Activity(
            state.next_id(),
            repo.id,
            f"refs/heads/{branch}",
            before or ZERO_SHA,
            after or ZERO_SHA,
            utcnow(),
            kind,
            actor,
        )
        state.activities.append(item)


def move(state: State, repo: Repo, branch: str, sha: str, actor: User | None, kind: str | None = None) -> None:
    """Point `branch` at `sha` and record it: a new branch is `branch_creation`, a fast-forward `push`,
    anything else `force_push`, unless `kind` says (`pr_merge`, `merge_queue_merge`)."""
    with state.lock:
        before = gitops.rev(repo.path, f"refs/heads/{branch}")
        gitops.update_ref(repo.path, f"refs/heads/{branch}", sha)
        if kind is None:
            fast_forward = before is not None and gitops.is_ancestor(repo.path, before, sha)
            kind = "branch_creation" if before is None else "push" if fast_forward else "force_push"
        _record(state, repo, branch, before, sha, actor, kind)


def delete(state: State, repo: Repo, branch: str, actor: User | None) -> None:
    """Delete `branch`; its commits stay in the object store, fetchable by SHA like GitHub's."""
    with state.lock:
        before = gitops.rev(repo.path, f"refs/heads/{branch}")
        gitops.git(repo.path, "update-ref", "-d", f"refs/heads/{branch}")
        _record(state, repo, branch, before, None, actor, "branch_deletion")


def to_json(item: Activity, base: str) -> Json:
    return {
        "id": item.id,
        "node_id": shapes.node_id("RepositoryActivity", item.id),
        "before": item.before,
        "after": item.after,
        "ref": item.ref,
        "timestamp": iso(item.timestamp),
        "activity_type": item.activity_type,
        "actor": shapes.user(item.actor, base) if item.actor is not None else None,
    }
