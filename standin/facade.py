"""The control API tests and `make demo` drive: make repos, users, PRs and comments, send webhooks."""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from standin import comment_edits, delivery, gitops, payloads
from standin.delivery import Delivery
from standin.facade_checks import ChecksControl
from standin.facade_pulls import PullsControl
from standin.facade_reviews import ReviewsControl
from standin.faults import Faults
from standin.gitops import FileContent
from standin.keys import public_key_of
from standin.limits import Limits
from standin.pushes import commit_on
from standin.state import App, CheckRun, Comment, Repo, State, Status, User, utcnow


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


class StandIn(PullsControl, ReviewsControl, ChecksControl):
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
        """A bare repo with one initial commit, pushed by `owner`; installed: the App's installation on `owner`
        covers it."""
        state = self.state
        with state.lock:
            path = self.root / owner / f"{name}.git"
            gitops.init_bare(path, default_branch)
            repo = Repo(state.next_id(), state.user(owner), name, default_branch, private, path)
            commit_on(state, repo, default_branch, dict(files), "Initial commit", repo.owner, owner, owner)
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
        """A new commit on `branch` (created from the default branch if missing), authored, committed and
        pushed by the login `author`; sends no webhook."""
        return commit_on(self.state, repo, branch, files, message, self.add_user(author), author, author)

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

    # -- comments --------------------------------------------------------------------------------
    def comment(self, repo: Repo, number: int, login: str, body: str, deliver: bool = True) -> Comment:
        """A human (or any user) comments on an issue or PR: `issue_comment` created."""
        state, user = self.state, self.add_user(login)
        with state.lock:
            if (repo.id, number) not in state.pulls and (repo.id, number) not in state.issues:
                raise ValueError(f"no issue or PR #{number} in {repo.full_name}")
            now = utcnow()
            comment = Comment(state.next_id(), repo.id, number, body, user, now, now)
            state.add_comment(comment)
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

    def _deliver_later(self, item: Delivery) -> None:
        """The hookshot's sender: like `deliver`, but a failed delivery is only recorded, as on GitHub."""
        self.outbox.append(item)
        if self.app.webhook_url is not None:
            with contextlib.suppress(httpx.HTTPError):
                delivery.send(self.app.webhook_url, item, self.app.webhook_secret, self.app.id)
