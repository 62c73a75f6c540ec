"""`check_run` and `merge_group` webhook payloads shaped like GitHub's (tests/fixtures/github/webhooks/schemas)."""

from __future__ import annotations

from standin import check_shapes, gitops, payloads
from standin.merge_queue import MergeGroup
from standin.shapes import Json
from standin.state import CheckRun, Repo, State, User


def check_run(
    state: State,
    repo: Repo,
    run: CheckRun,
    action: str,
    sender: User,
    base: str,
    identifier: str | None = None,
) -> Json:
    """created | completed | rerequested | requested_action (with the pressed button's `identifier`)."""
    shown = check_shapes.run(state, run, repo, base)
    shown["check_suite"] = check_shapes.suite(state, state.check_suites[run.suite_id], repo, base)
    payload: Json = {"action": action, "check_run": shown}
    if identifier is not None:
        payload["requested_action"] = {"identifier": identifier}
    return {**payload, **payloads._common(state, repo, sender, base)}


def _simple_commit(repo: Repo, sha: str) -> Json:
    fmt = "%T%x1f%B%x1f%aI%x1f%an%x1f%ae%x1f%cn%x1f%ce"
    tree, message, when, an, ae, cn, ce = gitops.git(repo.path, "show", "-s", f"--format={fmt}", sha).split("\x1f")
    return {
        "id": sha,
        "tree_id": tree,
        "message": message.rstrip("\n"),
        "timestamp": when,
        "author": {"name": an, "email": ae},
        "committer": {"name": cn, "email": ce.strip()},
    }


def merge_group(
    state: State, group: MergeGroup, action: str, sender: User, base: str, reason: str | None = None
) -> Json:
    """checks_requested, or destroyed with its `reason`."""
    payload: Json = {"action": action}
    if reason is not None:
        payload["reason"] = reason
    payload["merge_group"] = {
        "head_sha": group.head_sha,
        "head_ref": f"refs/heads/{group.head_ref}",
        "base_sha": group.base_sha,
        "base_ref": f"refs/heads/{group.base_ref}",
        "head_commit": _simple_commit(group.repo, group.head_sha),
    }
    return {**payload, **payloads._common(state, group.repo, sender, base)}
