"""Commits pushed to a branch, and who GitHub lets push onto a pull request's branch."""

from __future__ import annotations

from collections.abc import Mapping

from standin import activity, gitops, identities
from standin.gitops import FileContent
from standin.identities import Who
from standin.state import WRITERS, PullRequest, Repo, State, User


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
        own, default = f"refs/heads/{branch}", f"refs/heads/{repo.default_branch}"
        tip = gitops.rev(repo.path, own) or gitops.rev(repo.path, default)
        made = identities.of(state, author), identities.of(state, committer)
        sha = gitops.commit_files(repo.path, parent or tip, files, message, *made)
        if recorded:
            activity.move(state, repo, branch, sha, pusher)
        else:
            gitops.update_ref(repo.path, own, sha)
        return sha


def fork_owner(pr: PullRequest) -> str | None:
    """The login owning the fork a PR comes from; None for a PR from a branch of the repository itself."""
    return pr.head_repo_full_name.split("/", 1)[0] if pr.head_repo_full_name else None


def check_may_push(state: State, repo: Repo, pr: PullRequest, login: str) -> None:
    """GitHub's rule for pushing to a PR's branch, or PermissionError with git's 403 refusal.

    A branch of the repository: anyone with write access (a writer may push onto a colleague's PR), and the
    PR's author, who pushed the branch. A fork's branch: the fork's owner, and the repository's writers when
    the PR allows edits by maintainers."""
    writer = state.permission(repo, login) in WRITERS
    owner = fork_owner(pr)
    if owner is None:
        allowed = writer or login == pr.author.login
    else:
        allowed = login == owner or (writer and pr.maintainer_can_modify)
    if not allowed:
        target = pr.head_repo_full_name or repo.full_name
        raise PermissionError(f"Permission to {target}.git denied to {login}.")
