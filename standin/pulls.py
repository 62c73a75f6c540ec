"""Pull-request views computed from the real git repository: changed files and the served JSON."""

from __future__ import annotations

from standin import gitops, shapes
from standin.gitops import FileChange
from standin.shapes import Json
from standin.state import PullRequest, Repo, State

MAX_FILES = 3000  # GitHub's list-files endpoint stops here


def refresh_base(state: State, repo: Repo, pr: PullRequest) -> None:
    """An open PR's base SHA follows its base branch; a closed one keeps the SHA it closed with."""
    if pr.state == "open":
        pr.base_sha = gitops.rev(repo.path, f"refs/heads/{pr.base_ref}") or pr.base_sha


def files(state: State, repo: Repo, pr: PullRequest) -> list[FileChange]:
    refresh_base(state, repo, pr)
    return gitops.diff_files(repo.path, pr.base_sha, pr.head_sha)[:MAX_FILES]


def file_json(change: FileChange, repo: Repo, head_sha: str, base: str) -> Json:
    out: Json = {
        "sha": change.sha,
        "filename": change.filename,
        "status": change.status,
        "additions": change.additions,
        "deletions": change.deletions,
        "changes": change.additions + change.deletions,
        "blob_url": f"{base}/{repo.full_name}/blob/{head_sha}/{change.filename}",
        "raw_url": f"{base}/{repo.full_name}/raw/{head_sha}/{change.filename}",
        "contents_url": f"{base}/repos/{repo.full_name}/contents/{change.filename}?ref={head_sha}",
    }
    if change.previous_filename is not None:
        out["previous_filename"] = change.previous_filename
    return out


MAX_COMMITS = 250  # GitHub's list-commits endpoint stops here; the PR's `commits` count does not


def commits(state: State, repo: Repo, pr: PullRequest) -> list[gitops.CommitInfo]:
    """The PR's commits, oldest first, as GitHub lists them: the first 250 only (apache/devlake#6646)."""
    refresh_base(state, repo, pr)
    return gitops.log(repo.path, pr.base_sha, pr.head_sha)[:MAX_COMMITS]


def pull_json(state: State, repo: Repo, pr: PullRequest, base: str) -> Json:
    changed = len(files(state, repo, pr))
    on_lines = sum(1 for c in state.review_comments.values() if (c.repo_id, c.number) == (repo.id, pr.number))
    return shapes.pull(pr, repo, base, changed, gitops.count(repo.path, pr.base_sha, pr.head_sha), on_lines)


def test_merge(repo: Repo, pr: PullRequest) -> str | None:
    """GitHub's `refs/pull/N/merge`: an open PR's merge_commit_sha is this test merge, never the head."""
    try:
        tree = gitops.merge_tree(repo.path, pr.base_sha, pr.head_sha)
    except gitops.GitError:
        return None  # conflicts: GitHub has no test merge either
    sha = gitops.commit_tree(repo.path, tree, [pr.base_sha, pr.head_sha], f"Merge {pr.head_sha} into {pr.base_sha}")
    gitops.update_ref(repo.path, f"refs/pull/{pr.number}/merge", sha)
    return sha
