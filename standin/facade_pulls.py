"""The part of the control API that opens, pushes to, merges and closes pull requests (`StandIn` inherits it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from standin import activity, gitops, payloads, pulls
from standin.gitops import FileContent
from standin.pushes import commit_on
from standin.state import PullRequest, Repo, State, User, utcnow


class PullsControl:
    """Pull requests as people make them: opened, pushed to, merged, closed."""

    if TYPE_CHECKING:  # what StandIn provides
        state: State
        base_url: str

        def add_user(self, login: str, type: str = "User") -> User: ...

        def head(self, repo: Repo, branch: str) -> str | None: ...

        def _emit(self, event: str, payload: dict[str, Any], deliver: bool) -> None: ...

        def _push_event(
            self, repo: Repo, branch: str, before: str, after: str, sender: User, deliver: bool
        ) -> None: ...

    def open_pr(
        self,
        repo: Repo,
        head_branch: str,
        author: str,
        title: str,
        files: Mapping[str, FileContent] | None = None,
        *,
        body: str | None = None,
        base: str | None = None,
        fork: str | None = None,
        deliver: bool = True,
    ) -> PullRequest:
        """Open a PR from head_branch (committing `files` onto it first); fork: the head repo's full name."""
        state, user = self.state, self.add_user(author)
        with state.lock:
            if files is not None:  # a fork's branch is pushed to the fork: GitHub records no activity here
                commit_on(state, repo, head_branch, files, title, user, author, author, recorded=fork is None)
            base_ref = base or repo.default_branch
            head_sha, base_sha = self.head(repo, head_branch), self.head(repo, base_ref)
            if head_sha is None or base_sha is None:
                raise ValueError(f"no branch {head_branch!r} or {base_ref!r} in {repo.full_name}")
            now, number = utcnow(), state.next_number(repo.id)
            pr = PullRequest(
                state.next_id(),
                repo.id,
                number,
                title,
                body,
                user,
                head_branch,
                head_sha,
                base_ref,
                base_sha,
                now,
                now,
                head_repo_full_name=fork,
            )
            state.pulls[(repo.id, number)] = pr
            self._refresh_pull_refs(repo, pr)
        self._emit("pull_request", payloads.pull_request(state, repo, pr, "opened", user, self.base_url), deliver)
        return pr

    def push_pr(
        self, pr: PullRequest, files: Mapping[str, FileContent], message: str = "Update", deliver: bool = True
    ) -> str:
        """A new commit on the PR's head branch and the `synchronize` webhook."""
        state = self.state
        with state.lock:
            repo = state.repos[pr.repo_id]
            before = pr.head_sha
            who, fork = pr.author.login, pr.head_repo_full_name is not None
            pr.head_sha = commit_on(state, repo, pr.head_ref, files, message, pr.author, who, who, recorded=not fork)
            pr.updated_at = utcnow()
            self._refresh_pull_refs(repo, pr)
        payload = payloads.pull_request(state, repo, pr, "synchronize", pr.author, self.base_url, before=before)
        self._emit("pull_request", payload, deliver)
        return pr.head_sha

    def merge_pr(
        self, pr: PullRequest, method: str = "merge", merged_by: str | None = None, deliver: bool = True
    ) -> str:
        """Merge like GitHub: `pull_request` closed (merged) then `push`; returns the pushed SHA.

        merge: a merge commit; squash: one new commit; rebase: the head SHA when base is its ancestor
        (fast-forward), else one rebased commit."""
        state, user = self.state, self.add_user(merged_by or pr.author.login)
        with state.lock:
            repo = state.repos[pr.repo_id]
            if pr.state != "open":
                raise ValueError(f"PR #{pr.number} is not open")
            pulls.refresh_base(state, repo, pr)
            before = pr.base_sha
            if method == "rebase" and gitops.is_ancestor(repo.path, before, pr.head_sha):
                sha = pr.head_sha
            else:
                tree = gitops.merge_tree(repo.path, before, pr.head_sha)
                if method == "merge":
                    message = f"Merge pull request #{pr.number} from {pr.head_ref}\n\n{pr.title}"
                    sha = gitops.commit_tree(repo.path, tree, [before, pr.head_sha], message)
                else:
                    sha = gitops.commit_tree(repo.path, tree, [before], f"{pr.title} (#{pr.number})")
            activity.move(state, repo, pr.base_ref, sha, user, "pr_merge")
            now = utcnow()
            pr.state, pr.merged, pr.merged_at, pr.closed_at, pr.updated_at = "closed", True, now, now, now
            pr.merged_by, pr.merge_commit_sha = user, sha
        self._emit("pull_request", payloads.pull_request(state, repo, pr, "closed", user, self.base_url), deliver)
        self._push_event(repo, pr.base_ref, before, sha, user, deliver)
        return sha

    def close_pr(self, pr: PullRequest, closed_by: str | None = None, deliver: bool = True) -> None:
        state, user = self.state, self.add_user(closed_by or pr.author.login)
        with state.lock:
            repo = state.repos[pr.repo_id]
            pulls.refresh_base(state, repo, pr)
            pr.state, pr.closed_at, pr.updated_at = "closed", utcnow(), utcnow()
        self._emit("pull_request", payloads.pull_request(state, repo, pr, "closed", user, self.base_url), deliver)

    def _refresh_pull_refs(self, repo: Repo, pr: PullRequest) -> None:
        """refs/pull/N/head and the test merge, so a client can fetch both, as on GitHub."""
        gitops.update_ref(repo.path, f"refs/pull/{pr.number}/head", pr.head_sha)
        pulls.refresh_base(self.state, repo, pr)
        pr.previous_merge, pr.merge_commit_sha = pr.merge_commit_sha, pulls.test_merge(repo, pr)
        pr.mergeability_unknown = self.state.mergeability_reads
