"""The control API tests and `plangate demo` drive: make repos, users, PRs and comments, send webhooks."""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from standin import checks, comment_edits, delivery, gitops, identities, merge_queue, payloads, payloads_checks, pulls
from standin.delivery import Delivery
from standin.faults import Faults
from standin.gitops import FileContent
from standin.keys import public_key_of
from standin.limits import Limits
from standin.state import App, CheckRun, Comment, PullRequest, Repo, State, Status, User, utcnow


@dataclass(frozen=True)
class Report:
    """A commit status or a check run, as a person reads it in the checks box."""

    context: str
    state: str  # pending | success | failure | error
    description: str | None
    target_url: str | None
    summary: str | None = None  # a check run's Markdown summary
    actions: tuple[str, ...] = ()  # a check run's button identifiers

    @classmethod
    def of_status(cls, status: Status) -> Report:
        return cls(status.context, status.state, status.description, status.target_url)

    @classmethod
    def of_check_run(cls, run: CheckRun) -> Report:
        state = "pending" if run.status != "completed" else ("success" if run.conclusion == "success" else "failure")
        actions = tuple(a["identifier"] for a in run.actions)
        return cls(run.name, state, run.title, run.details_url, run.summary, actions)


class StandIn:
    """One fake GitHub with one App. `base_url` is set by `standin.server.start`."""

    def __init__(
        self,
        root: Path,
        private_key_pem: str,
        *,
        app_id: int = 1,
        slug: str = "plangate",
        webhook_url: str | None = None,
        webhook_secret: str | None = None,
        token_ttl: dt.timedelta = dt.timedelta(hours=1),
        callback_urls: list[str] | None = None,
        limits: Limits | None = None,
    ) -> None:
        """`limits`: GitHub's rate limits by default; `gh.limits` can be changed while it runs."""
        bot = User(login=f"{slug}[bot]", id=10_000 + app_id, type="Bot")
        app = App(
            id=app_id,
            slug=slug,
            name=slug,
            public_key_pem=public_key_of(private_key_pem),
            private_key_pem=private_key_pem,
            webhook_url=webhook_url,
            webhook_secret=webhook_secret or secrets.token_hex(20),
            client_id=f"Iv1.{secrets.token_hex(8)}",
            bot=bot,
            callback_urls=list(callback_urls or []),
        )
        self.root = root
        self.state = State(app, token_ttl)
        self.state.hookshot.deliver = self._deliver_later
        self.base_url = "http://127.0.0.1"
        self.outbox: list[Delivery] = []
        self.limits = limits or Limits()
        self.faults = Faults()

    @property
    def app(self) -> App:
        return self.state.app

    # -- users and permissions -------------------------------------------------------------------
    def add_user(self, login: str, type: str = "User") -> User:
        return self.state.user(login, type)

    def set_permission(self, repo: Repo, login: str, perm: str) -> None:
        """admin | maintain | write | triage | read | none (none: not a collaborator, a 404)."""
        self.add_user(login)
        with self.state.lock:
            self.state.permissions[(repo.id, login)] = perm

    def add_team_member(self, org: str, slug: str, login: str) -> None:
        self.add_user(login)
        with self.state.lock:
            self.state.teams.setdefault((org.lower(), slug.lower()), set()).add(login)

    def sign_in_browser(self, login: str | None, *, approve: bool = True) -> None:
        """Who is signed in to GitHub in "the" browser (None: nobody), and whether they press "Authorize"
        when an App's sign-in asks; `/login/oauth/authorize` answers for that person."""
        if login is not None:
            self.add_user(login)
        with self.state.lock:
            self.state.browser_login, self.state.browser_approves = login, approve

    # -- repositories ----------------------------------------------------------------------------
    def create_repo(
        self,
        owner: str,
        name: str,
        files: dict[str, str],
        default_branch: str = "main",
        private: bool = False,
        installed: bool = True,
    ) -> Repo:
        """A bare repo with one initial commit; installed: the App's installation on `owner` covers it."""
        state = self.state
        with state.lock:
            path = self.root / owner / f"{name}.git"
            gitops.init_bare(path, default_branch)
            sha = gitops.commit_files(path, None, dict(files), "Initial commit", identities.of(state, owner))
            gitops.update_ref(path, f"refs/heads/{default_branch}", sha)
            repo = Repo(state.next_id(), state.user(owner), name, default_branch, private, path)
            state.repos[repo.id] = repo
            if installed:
                inst = state.installation_for(owner)
                inst.repo_ids.add(repo.id)
                repo.installation_id = inst.id
            return repo

    def head(self, repo: Repo, branch: str) -> str | None:
        return gitops.rev(repo.path, f"refs/heads/{branch}")

    def commit(
        self, repo: Repo, branch: str, files: Mapping[str, FileContent], message: str = "Update", author: str = "dev"
    ) -> str:
        """A new commit on `branch` (created from the default branch if missing), authored and committed by
        the login `author`; sends no webhook."""
        with self.state.lock:
            parent = self.head(repo, branch) or self.head(repo, repo.default_branch)
            sha = gitops.commit_files(repo.path, parent, files, message, identities.of(self.state, author))
            gitops.update_ref(repo.path, f"refs/heads/{branch}", sha)
            return sha

    def push(
        self,
        repo: Repo,
        branch: str,
        files: Mapping[str, FileContent],
        pusher: str,
        message: str = "Update",
        deliver: bool = True,
    ) -> str:
        """A direct push: commit on `branch` and the `push` webhook."""
        before = self.head(repo, branch) or payloads.ZERO_SHA
        sha = self.commit(repo, branch, files, message, pusher)
        self._push_event(repo, branch, before, sha, self.add_user(pusher), deliver)
        return sha

    # -- pull requests ---------------------------------------------------------------------------
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
            if files is not None:
                self.commit(repo, head_branch, files, title, author)
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
            pr.head_sha = self.commit(repo, pr.head_ref, files, message, pr.author.login)
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
            gitops.update_ref(repo.path, f"refs/heads/{pr.base_ref}", sha)
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

    # -- comments --------------------------------------------------------------------------------
    def comment(self, repo: Repo, number: int, login: str, body: str, deliver: bool = True) -> Comment:
        """A human (or any user) comments on an issue or PR: `issue_comment` created."""
        state, user = self.state, self.add_user(login)
        with state.lock:
            if (repo.id, number) not in state.pulls and (repo.id, number) not in state.issues:
                raise ValueError(f"no issue or PR #{number} in {repo.full_name}")
            now = utcnow()
            comment = Comment(state.next_id(), repo.id, number, body, user, now, now)
            state.comments[comment.id] = comment
        payload = payloads.issue_comment(state, repo, comment, "created", user, self.base_url)
        self._emit("issue_comment", payload, deliver)
        return comment

    def edit_comment(self, comment: Comment, body: str, editor: str | None = None, deliver: bool = True) -> Comment:
        """`editor` (default: the author) rewrites the comment: `issue_comment` `edited` with `changes.body.from`.
        GitHub lets the author and anyone with write access do it (so a writer may rewrite the App's comments);
        anyone else gets PermissionError. The edit is kept on `comment.edits` and bumps `updated_at`."""
        state, user = self.state, self.add_user(editor or comment.user.login)
        old = comment_edits.edit(state, comment, body, user)
        repo = state.repos[comment.repo_id]
        payload = payloads.issue_comment(state, repo, comment, "edited", user, self.base_url, old_body=old)
        self._emit("issue_comment", payload, deliver)
        return comment

    def delete_comment(self, comment: Comment, deleter: str | None = None, deliver: bool = True) -> None:
        """`deleter` (default: the author) deletes the comment: `issue_comment` `deleted`; who may is as for
        `edit_comment`. Who did it is kept on `comment.deletion`."""
        state, user = self.state, self.add_user(deleter or comment.user.login)
        comment_edits.delete(state, comment, user)
        repo = state.repos[comment.repo_id]
        payload = payloads.issue_comment(state, repo, comment, "deleted", user, self.base_url)
        self._emit("issue_comment", payload, deliver)

    # -- reading state back ----------------------------------------------------------------------
    def comments_on(self, repo: Repo, number: int) -> list[Comment]:
        with self.state.lock:
            found = [c for c in self.state.comments.values() if c.repo_id == repo.id and c.number == number]
            return sorted(found, key=lambda c: c.id)

    def reactions_on(self, comment: Comment) -> list[str]:
        with self.state.lock:
            return [r.content for r in self.state.reactions if r.comment_id == comment.id]

    def statuses(self, repo: Repo, sha: str) -> dict[str, Status]:
        """The latest status per context on `sha`."""
        return {s.context: s for s in self.state.combined_statuses(repo.id, sha)}

    def reports(self, repo: Repo, sha: str) -> dict[str, Report]:
        """What the PR's checks box shows for `sha`: every commit status and check run by name, the
        newest of each, as state (pending, success, failure, error), description and link."""
        found = {name: Report.of_status(s) for name, s in self.statuses(repo, sha).items()}
        runs = self.check_runs(repo, sha)
        for name, run in runs.items():
            found[name] = Report.of_check_run(run)
        return found

    def manifest_code(self, ttl: dt.timedelta = dt.timedelta(hours=1)) -> str:
        """A code that `POST /app-manifests/{code}/conversions` turns into this App's credentials once."""
        code = secrets.token_hex(10)
        with self.state.lock:
            self.state.manifest_codes[code] = utcnow() + ttl
        return code

    # -- webhooks --------------------------------------------------------------------------------
    def deliver(self, event: str, payload: dict[str, Any]) -> httpx.Response:
        """Send one signed webhook to the App's webhook URL (which must be set)."""
        url = self.app.webhook_url
        if url is None:
            raise RuntimeError("the App has no webhook URL")
        item = Delivery(event, payload)
        self.outbox.append(item)
        return delivery.send(url, item, self.app.webhook_secret, self.app.id)

    def redeliver(self, item: Delivery) -> httpx.Response:
        """GitHub's "Redeliver": same GUID, same payload."""
        if self.app.webhook_url is None:
            raise RuntimeError("the App has no webhook URL")
        return delivery.send(self.app.webhook_url, item, self.app.webhook_secret, self.app.id)

    def _emit(self, event: str, payload: dict[str, Any], deliver: bool) -> None:
        if deliver and self.app.webhook_url is not None:
            self.deliver(event, payload)
        else:
            self.outbox.append(Delivery(event, payload))

    def _push_event(self, repo: Repo, branch: str, before: str, after: str, sender: User, deliver: bool) -> None:
        with self.state.lock:  # like GitHub, a moved base branch gets every open PR on it a new test merge
            for pr in self.state.pulls.values():
                if pr.repo_id == repo.id and pr.state == "open" and pr.base_ref == branch:
                    self._refresh_pull_refs(repo, pr)
        payload = payloads.push(self.state, repo, f"refs/heads/{branch}", before, after, sender, self.base_url)
        self._emit("push", payload, deliver)

    def _refresh_pull_refs(self, repo: Repo, pr: PullRequest) -> None:
        """refs/pull/N/head and the test merge, so a client can fetch both, as on GitHub."""
        gitops.update_ref(repo.path, f"refs/pull/{pr.number}/head", pr.head_sha)
        pulls.refresh_base(self.state, repo, pr)
        pr.previous_merge, pr.merge_commit_sha = pr.merge_commit_sha, pulls.test_merge(repo, pr)
        pr.mergeability_unknown = self.state.mergeability_reads

    # -- installation permissions, check runs, the merge queue ----------------------------------------
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
            group = merge_queue.build(repo, prs, base or repo.default_branch)
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
            merge_queue.delete_branch(group)
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
        if run.status != "completed" or run.app.id != self.app.id:
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

    def _deliver_later(self, item: Delivery) -> None:
        """The hookshot's sender: like `deliver`, but a failed delivery is only recorded, as on GitHub."""
        self.outbox.append(item)
        if self.app.webhook_url is not None:
            with contextlib.suppress(httpx.HTTPError):
                delivery.send(self.app.webhook_url, item, self.app.webhook_secret, self.app.id)
