"""The part of the control API that opens, pushes to, merges and closes pull requests (`StandIn` inherits it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from standin import activity, gitops, payloads, pulls
from standin.gitops import FileContent
from standin.identities import Who
from standin.pushes import check_may_push, commit_on, fork_owner
from standin.state import PullRequest, Repo, State, User, utcnow


class PullsControl:
    """Pull requests as people make them: opened, pushed to (by whoever GitHub lets push), merged, closed."""

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
        maintainer_can_modify: bool = True,
    ) -> PullRequest:
        """Open a PR from head_branch (committing `files` onto it first); fork: the head repo's full name.
        maintainer_can_modify: a fork PR's "Allow edits by maintainers" box, checked by default as on GitHub
        (a PR from the repository's own branch reports false)."""
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
                maintainer_can_modify=maintainer_can_modify and fork is not None,
            )
            state.pulls[(repo.id, number)] = pr
            self._refresh_pull_refs(repo, pr)
        self._emit("pull_request", payloads.pull_request(state, repo, pr, "opened", user, self.base_url), deliver)
        return pr

    def push_pr(
        self,
        pr: PullRequest,
        files: Mapping[str, FileContent],
        message: str = "Update",
        deliver: bool = True,
        *,
        pusher: str | None = None,
        author: Who | None = None,
        committer: Who | None = None,
    ) -> str:
        """`pusher` (default: the PR's author) pushes a new commit onto the PR's head branch: the `synchronize`
        webhook, sent by `pusher`. Returns the new head SHA.

        Who may push is GitHub's rule (`standin.pushes.check_may_push`): to a branch of the repository, anyone
        with write access and the PR's author; to a fork's branch, the fork's owner and, when the PR allows edits
        by maintainers, the repository's writers. Anyone else gets PermissionError, as git gets GitHub's 403.

        `author` and `committer` are the commit's git identities (default: the pusher): a login is written with
        that user's no-reply email, which GitHub maps back to them; a `standin.Identity(name, email)` is written
        as given, and GitHub maps it to a user only by its email: `Identity("ghost", "nobody@example.com")` is a
        commit of nobody (REST `author`/`committer` null, no `username` in push payloads)."""
        return self._push_pr(pr, files, message, deliver, pusher, author, committer, None)

    def force_push_pr(
        self,
        pr: PullRequest,
        files: Mapping[str, FileContent],
        message: str = "Update",
        deliver: bool = True,
        *,
        pusher: str | None = None,
        author: Who | None = None,
        committer: Who | None = None,
        onto: str | None = None,
    ) -> str:
        """Like `push_pr`, but the new commit's parent is `onto` (default: the PR's base SHA), so the PR's earlier
        commits leave its branch and its commit list: a force push, recorded as one in the repository's activity."""
        return self._push_pr(pr, files, message, deliver, pusher, author, committer, onto or pr.base_sha)

    def _push_pr(
        self,
        pr: PullRequest,
        files: Mapping[str, FileContent],
        message: str,
        deliver: bool,
        pusher: str | None,
        author: Who | None,
        committer: Who | None,
        parent: str | None,
    ) -> str:
        state, user = self.state, self.add_user(pusher or pr.author.login)
        with state.lock:
            repo = state.repos[pr.repo_id]
            check_may_push(state, repo, pr, user.login)
            before, fork = pr.head_sha, fork_owner(pr) is not None
            made = (author or user.login, committer or user.login)
            pr.head_sha = commit_on(state, repo, pr.head_ref, files, message, user, *made, parent, recorded=not fork)
            pr.updated_at = utcnow()
            self._refresh_pull_refs(repo, pr)
        payload = payloads.pull_request(state, repo, pr, "synchronize", user, self.base_url, before=before)
        self._emit("pull_request", payload, deliver)
        return pr.head_sha

    def merge_pr(
        self, pr: PullRequest, method: str = "merge", merged_by: str | None = None, deliver: bool = True
    ) -> str:
        """Merge like GitHub: `pull_request` closed (merged) then `push`; returns the pushed SHA. The repository's
        activity records a `pr_merge` by `merged_by` (default: the PR's author).

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
