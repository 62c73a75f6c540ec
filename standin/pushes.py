"""Commits pushed to a branch, recorded in the repository's activity."""

from __future__ import annotations

from collections.abc import Mapping

from standin import activity, gitops, identities
from standin.gitops import FileContent
from standin.identities import Who
from standin.state import Repo, State, User


def commit_on(
    state: State,
    repo: Repo,
    branch: str,
    files: Mapping[str, FileContent],
    message: str,
    pusher: User,
    author: Who,
    committer: Who,
    parent: str | None = None,
    *,
    recorded: bool = True,
) -> str:
    """`pusher` pushes one new commit onto `branch` (made from the default branch if missing), on top of
    `parent` (default: the branch's head, so a fast-forward). `recorded`: False for a fork's branch, whose
    pushes GitHub records on the fork, not here."""
    with state.lock:
        tip = gitops.rev(repo.path, f"refs/heads/{branch}") or gitops.rev(
            repo.path, f"refs/heads/{repo.default_branch}"
        )
        made = identities.of(state, author), identities.of(state, committer)
        sha = gitops.commit_files(repo.path, parent or tip, files, message, *made)
        if recorded:
            activity.move(state, repo, branch, sha, pusher)
        else:
            gitops.update_ref(repo.path, f"refs/heads/{branch}", sha)
        return sha
