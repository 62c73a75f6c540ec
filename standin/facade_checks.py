"""The part of the control API that drives check runs and the merge queue (`StandIn` inherits it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from standin import checks, merge_queue, payloads, payloads_checks
from standin.state import CheckRun, PullRequest, Repo, State, User


class ChecksControl:
    """Installation permissions, check runs of this App and of others, the buttons on them, the merge queue."""

    if TYPE_CHECKING:  # what StandIn provides
        state: State
        base_url: str

        def add_user(self, login: str, type: str = "User") -> User: ...

        def _emit(self, event: str, payload: dict[str, Any], deliver: bool) -> None: ...

        def _push_event(
            self, repo: Repo, branch: str, before: str, after: str, sender: User, deliver: bool
        ) -> None: ...

    def set_installation_permission(self, repo: Repo, name: str, level: str | None) -> None:
        """Change what the installation on `repo` was granted (`level` None drops `name`). Its tokens, old and
        new, get GitHub's 403 on the check-run routes without `checks`, and it is sent no `check_run`
        `rerequested`/`requested_action` without `checks: write` and no `merge_group` without `merge_queues`."""
        with self.state.lock:
            if repo.installation_id is None:
                raise ValueError(f"the App is not installed on {repo.full_name}")
            granted = self.state.installations[repo.installation_id].permissions
            if level is None:
                granted.pop(name, None)
            else:
                granted[name] = level

    def check_runs(self, repo: Repo, sha: str) -> dict[str, CheckRun]:
        """The newest check run of each name on `sha`, of every App."""
        with self.state.lock:
            return {run.name: run for run in checks.latest_per_name(checks.runs_at(self.state, repo, sha))}

    def all_check_runs(self, repo: Repo, sha: str) -> list[CheckRun]:
        """Every check run on `sha`, of every App, oldest first."""
        with self.state.lock:
            return checks.runs_at(self.state, repo, sha)

    def add_foreign_check_run(
        self, repo: Repo, sha: str, name: str, app_slug: str = "ci", conclusion: str | None = "success"
    ) -> CheckRun:
        """A check run of another App (a CI service): completed with `conclusion`, or in progress when None.
        GitHub tells this App nothing about it; this App may read it but not change it."""
        with self.state.lock:
            body = {"name": name, "head_sha": sha, "status": "in_progress"}
            if conclusion is not None:
                body["conclusion"] = conclusion
            return checks.create_run(self.state, repo, checks.other_app(self.state, app_slug), body)

    def rerequest_check_run(self, run: CheckRun, login: str, deliver: bool = True) -> None:
        """`login` presses "Re-run" on a completed run: its suite starts over and the App that made it gets
        `check_run` `rerequested`; the run itself is not changed."""
        self._check_run_event(run, login, "rerequested", None, deliver)

    def request_check_run_action(self, run: CheckRun, login: str, identifier: str, deliver: bool = True) -> None:
        """`login` presses the completed run's button `identifier`: `check_run` `requested_action`."""
        if identifier not in [action["identifier"] for action in run.actions]:
            raise ValueError(f"check run {run.id} offers no action {identifier!r}")
        self._check_run_event(run, login, "requested_action", identifier, deliver)

    def wait_for_app_events(self, timeout: float = 10.0) -> None:
        """Until the webhooks caused by API calls so far (a run created or completed) have been delivered."""
        self.state.hookshot.wait(timeout)

    def queue_merge_group(
        self,
        repo: Repo,
        prs: list[PullRequest],
        base: str | None = None,
        *,
        by: str | None = None,
        deliver: bool = True,
    ) -> merge_queue.MergeGroup:
        """The merge queue takes `prs` (in order) into `base` (default branch): it builds
        `gh-readonly-queue/{base}/pr-{n}-{sha}` and sends `merge_group` `checks_requested` (sender: `by`, who
        queued the last PR, default its author). No event without the installation's `merge_queues` permission."""
        with self.state.lock:
            group = merge_queue.build(self.state, repo, prs, base or repo.default_branch)
        sender = self.add_user(by) if by else prs[-1].author
        payload = payloads_checks.merge_group(self.state, group, "checks_requested", sender, self.base_url)
        self._emit_if_granted(repo, "merge_queues", "merge_group", payload, deliver)
        return group

    def merge_group_done(self, group: merge_queue.MergeGroup, reason: str, deliver: bool = True) -> None:
        """The group ends: `merged` fast-forwards the base to the group's head, closes each PR as merged
        (its own queue merge commit as `merge_commit_sha`) with `pull_request` `closed`, then one `push`;
        `invalidated` and `dequeued` leave the base and the PRs alone. Every time the temporary branch is deleted
        and `merge_group` `destroyed` is sent last."""
        if reason not in merge_queue.REASONS or group.reason is not None:
            raise ValueError(f"cannot end a merge group that is {group.reason or 'queued'} as {reason!r}")
        repo, bot = group.repo, self.add_user(merge_queue.QUEUE_BOT, "Bot")
        with self.state.lock:
            if reason == "merged":
                merge_queue.merge(self.state, group)
            merge_queue.delete_branch(self.state, group)
            group.reason = reason
        if reason == "merged":
            for pr in group.prs:
                payload = payloads.pull_request(self.state, repo, pr, "closed", bot, self.base_url)
                self._emit("pull_request", payload, deliver)
            self._push_event(repo, group.base_ref, group.base_sha, group.head_sha, bot, deliver)
        payload = payloads_checks.merge_group(self.state, group, "destroyed", bot, self.base_url, reason)
        self._emit_if_granted(repo, "merge_queues", "merge_group", payload, deliver)

    def _check_run_event(self, run: CheckRun, login: str, action: str, identifier: str | None, deliver: bool) -> None:
        """GitHub offers these buttons on completed runs and tells only the App that made the run."""
        if run.status != "completed" or run.app.id != self.state.app.id:
            raise ValueError(f"check run {run.id} is {run.status}, of App {run.app.slug}: nothing to press")
        user = self.add_user(login)
        with self.state.lock:
            repo = self.state.repos[run.repo_id]
            if action == "rerequested":
                checks.rerequest(self.state, run)
            payload = payloads_checks.check_run(self.state, repo, run, action, user, self.base_url, identifier)
        self._emit_if_granted(repo, "checks", "check_run", payload, deliver, level="write")

    def _emit_if_granted(
        self, repo: Repo, permission: str, event: str, payload: dict[str, Any], deliver: bool, level: str = "read"
    ) -> None:
        """GitHub sends these events only to an installation granted `permission` (at least `level`)."""
        granted = self.state.installations[repo.installation_id].permissions if repo.installation_id else {}
        if granted.get(permission) in (level, "write"):
            self._emit(event, payload, deliver)
