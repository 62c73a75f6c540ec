"""GitHub's merge queue in real git: a temporary branch merging the queued PRs onto the base, merged or dropped.

Each queued PR gets a merge commit ("Merge pull request #N from owner/branch") whose first parent is the base
or the entry ahead of it and whose second parent is the PR's head. The group's head is the last of them, on
`gh-readonly-queue/{base}/pr-{number}-{head_sha}` of the last PR (tests/fixtures/github/LIMITS.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from standin import activity, gitops
from standin.state import PullRequest, Repo, State, utcnow

QUEUE_BOT = "github-merge-queue[bot]"  # who GitHub says pushed and merged
REASONS = ("merged", "invalidated", "dequeued")


@dataclass
class MergeGroup:
    repo: Repo
    prs: list[PullRequest]
    base_ref: str  # branch names, without refs/heads/
    head_ref: str
    base_sha: str
    head_sha: str
    merge_commits: dict[int, str] = field(default_factory=dict)  # PR number → its merge commit in the group
    reason: str | None = None  # set once the group is destroyed


def build(state: State, repo: Repo, prs: list[PullRequest], base_ref: str) -> MergeGroup:
    """Merge `prs` in order onto the base branch's head; ValueError for a PR that cannot be queued there."""
    base_sha = gitops.rev(repo.path, f"refs/heads/{base_ref}")
    if not prs or base_sha is None:
        raise ValueError(f"nothing to queue, or no branch {base_ref!r} in {repo.full_name}")
    sha, commits = base_sha, {}
    for pr in prs:
        if pr.repo_id != repo.id or pr.state != "open" or pr.base_ref != base_ref:
            raise ValueError(f"PR #{pr.number} is not an open PR into {base_ref} of {repo.full_name}")
        try:
            tree = gitops.merge_tree(repo.path, sha, pr.head_sha)
        except gitops.GitError as conflict:
            raise ValueError(f"PR #{pr.number} conflicts with the queue ahead of it") from conflict
        owner = (pr.head_repo_full_name or repo.full_name).split("/")[0]
        message = f"Merge pull request #{pr.number} from {owner}/{pr.head_ref}\n\n{pr.title}"
        sha = commits[pr.number] = gitops.commit_tree(repo.path, tree, [sha, pr.head_sha], message)
    head_ref = f"gh-readonly-queue/{base_ref}/pr-{prs[-1].number}-{prs[-1].head_sha}"
    activity.move(state, repo, head_ref, sha, state.user(QUEUE_BOT, "Bot"))
    return MergeGroup(repo, list(prs), base_ref, head_ref, base_sha, sha, commits)


def merge(state: State, group: MergeGroup) -> None:
    """Fast-forward the base to the group's head; each PR is merged as its own merge commit."""
    if gitops.rev(group.repo.path, f"refs/heads/{group.base_ref}") != group.base_sha:
        raise ValueError(f"{group.base_ref} moved since the group was built: GitHub would invalidate it")
    bot, now = state.user(QUEUE_BOT, "Bot"), utcnow()
    activity.move(state, group.repo, group.base_ref, group.head_sha, bot, "merge_queue_merge")
    for pr in group.prs:
        pr.state, pr.merged, pr.merged_at, pr.closed_at, pr.updated_at = "closed", True, now, now, now
        pr.merged_by, pr.merge_commit_sha, pr.base_sha = bot, group.merge_commits[pr.number], group.base_sha


def delete_branch(state: State, group: MergeGroup) -> None:
    """The temporary branch goes; its commits stay in the object store, fetchable by SHA like GitHub's."""
    activity.delete(state, group.repo, group.head_ref, state.user(QUEUE_BOT, "Bot"))
