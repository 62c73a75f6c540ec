"""In-memory GitHub state shared by the HTTP routes and the control API, guarded by one lock."""

from __future__ import annotations

import datetime as dt
import itertools
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from standin.hookshot import Hookshot

PERMISSIONS = ("read", "triage", "write", "maintain", "admin")
WRITERS = ("write", "maintain", "admin")  # who may push to any branch, and edit or delete anyone's comment
# What the App asks for and an installation grants by default: plangate's manifest, check runs, merge-queue events.
DEFAULT_PERMISSIONS = {
    "checks": "write",
    "contents": "read",
    "issues": "write",
    "members": "read",
    "merge_queues": "read",
    "metadata": "read",
    "pull_requests": "write",
    "statuses": "write",
}


def _default_permissions() -> dict[str, str]:
    return dict(DEFAULT_PERMISSIONS)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def iso(when: dt.datetime) -> str:
    """GitHub's timestamp format: ISO 8601, UTC, `Z` suffix."""
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class User:
    login: str
    id: int
    type: str = "User"


@dataclass
class App:
    id: int
    slug: str
    name: str
    public_key_pem: str
    private_key_pem: str | None
    webhook_url: str | None
    webhook_secret: str
    client_id: str
    bot: User
    client_secret: str = field(default_factory=lambda: secrets.token_hex(20))
    callback_urls: list[str] = field(default_factory=list)  # where sign-in may send a browser back
    permissions: dict[str, str] = field(default_factory=_default_permissions)


@dataclass
class Installation:
    id: int
    account: User
    repo_ids: set[int] = field(default_factory=set)
    created_at: dt.datetime = field(default_factory=utcnow)
    permissions: dict[str, str] = field(default_factory=_default_permissions)  # granted; its tokens get no more


@dataclass
class Repo:
    id: int
    owner: User
    name: str
    default_branch: str
    private: bool
    path: Path
    installation_id: int | None = None

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"


@dataclass
class PullRequest:
    id: int
    repo_id: int
    number: int
    title: str
    body: str | None
    author: User
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    created_at: dt.datetime
    updated_at: dt.datetime
    head_repo_full_name: str | None = None
    state: str = "open"
    merged: bool = False
    merged_at: dt.datetime | None = None
    merged_by: User | None = None
    closed_at: dt.datetime | None = None
    merge_commit_sha: str | None = None
    mergeability_unknown: int = 0  # GETs left that answer `mergeable: null` while GitHub makes the test merge
    previous_merge: str | None = None  # the test merge those GETs still name
    maintainer_can_modify: bool = False  # a fork PR's "Allow edits by maintainers": the base repo's writers may push


@dataclass
class Issue:
    id: int
    repo_id: int
    number: int
    title: str
    body: str | None
    author: User
    created_at: dt.datetime
    updated_at: dt.datetime
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    closed_at: dt.datetime | None = None


@dataclass(frozen=True)
class CommentEdit:
    """Who changed a comment and when, as the comment's edit history shows it; `body` is what it said before."""

    editor: User
    at: dt.datetime
    body: str


@dataclass
class Comment:
    id: int
    repo_id: int
    number: int
    body: str
    user: User
    created_at: dt.datetime
    updated_at: dt.datetime
    edits: list[CommentEdit] = field(default_factory=list)  # oldest first
    deletion: CommentEdit | None = None  # set once deleted


@dataclass
class Reaction:
    id: int
    comment_id: int
    user: User
    content: str
    created_at: dt.datetime


@dataclass
class Status:
    id: int
    repo_id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: User
    created_at: dt.datetime


@dataclass(frozen=True)
class Activity:
    """One change of a branch as GitHub records it (standin.activity)."""

    id: int
    repo_id: int
    ref: str  # refs/heads/<branch>
    before: str  # all zeros for a branch created
    after: str  # all zeros for a branch deleted
    timestamp: dt.datetime
    activity_type: str
    actor: User | None  # None: GitHub shows a ghost (a deleted account)


@dataclass
class Token:
    installation_id: int
    expires_at: dt.datetime


@dataclass
class UserToken:
    """A `ghu_` user access token: acts as `login`, within what the App may reach too."""

    login: str
    expires_at: dt.datetime


@dataclass
class OAuthCode:
    """The web flow's code: single-use, short-lived, bound to the client and the redirect_uri it was sent to."""

    login: str
    client_id: str
    redirect_uri: str
    expires_at: dt.datetime


@dataclass
class LoggedRequest:
    method: str
    path: str
    status: int  # 0: the connection was dropped without an answer
    auth: str  # "jwt" | "token" | "basic" | "none"
    fault: bool = False  # an injected fault answered (or dropped) it
    rate_limit: str | None = None  # "primary" | "secondary": answered with a rate-limit refusal


@dataclass
class CheckSuite:
    id: int
    repo_id: int
    app: App
    head_sha: str
    head_branch: str | None
    before: str | None  # the head's first parent: the `before` of a one-commit push
    created_at: dt.datetime
    updated_at: dt.datetime
    status: str = "queued"
    conclusion: str | None = None


@dataclass
class CheckRun:
    id: int
    repo_id: int
    suite_id: int
    app: App
    name: str
    head_sha: str
    started_at: dt.datetime
    status: str = "queued"
    conclusion: str | None = None
    completed_at: dt.datetime | None = None
    details_url: str | None = None  # None: GitHub shows the App's homepage
    external_id: str = ""
    title: str | None = None
    summary: str | None = None
    text: str | None = None
    annotations: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, str]] = field(default_factory=list)


class State:
    """Everything the stand-in knows. Take `lock` around any read-modify-write."""

    def __init__(self, app: App, token_ttl: dt.timedelta = dt.timedelta(hours=1)) -> None:
        self.lock = threading.RLock()
        self.app = app
        self.token_ttl = token_ttl
        self._ids = itertools.count(1000)
        self.users: dict[str, User] = {app.bot.login: app.bot}
        self.installations: dict[int, Installation] = {}
        self.repos: dict[int, Repo] = {}
        self.permissions: dict[tuple[int, str], str] = {}
        self.teams: dict[tuple[str, str], set[str]] = {}
        self.pulls: dict[tuple[int, int], PullRequest] = {}
        self.issues: dict[tuple[int, int], Issue] = {}
        self.numbers: dict[int, int] = {}
        self.comments: dict[int, Comment] = {}
        self.reactions: list[Reaction] = []  # on issue comments and review comments (their ids never clash)
        # standin.reviews.Review and ReviewComment by id: typed there, which imports this module
        self.reviews: dict[int, Any] = {}
        self.review_comments: dict[int, Any] = {}
        self.statuses: list[Status] = []
        self.tokens: dict[str, Token] = {}
        self.manifest_codes: dict[str, dt.datetime] = {}
        self.oauth_codes: dict[str, OAuthCode] = {}
        self.user_tokens: dict[str, UserToken] = {}
        self.browser_login: str | None = None  # who is signed in to github.com in "the" browser
        self.mergeability_reads = 0  # after a PR's base moves, GETs of it answered `mergeable: null` (0: none)
        self.browser_approves = True  # whether that person presses "Authorize" on the consent page
        self.requests: list[LoggedRequest] = []
        self.check_suites: dict[int, CheckSuite] = {}
        self.check_runs: dict[int, CheckRun] = {}
        self.activities: list[Activity] = []  # every branch change, oldest first (standin.activity)
        self.hookshot = Hookshot()  # webhooks an API call causes, delivered after the answer

    def next_id(self) -> int:
        with self.lock:
            return next(self._ids)

    def add_comment(self, comment: Comment) -> None:
        """A new comment; like GitHub, it moves its issue's or pull request's `updated_at`."""
        with self.lock:
            self.comments[comment.id] = comment
            on = self.issues.get((comment.repo_id, comment.number)) or self.pulls.get((comment.repo_id, comment.number))
            if on is not None:
                on.updated_at = comment.created_at

    def next_number(self, repo_id: int) -> int:
        """PRs and issues share one number sequence per repository, like GitHub."""
        with self.lock:
            self.numbers[repo_id] = self.numbers.get(repo_id, 0) + 1
            return self.numbers[repo_id]

    def user(self, login: str, type: str = "User") -> User:
        with self.lock:
            if login not in self.users:
                self.users[login] = User(login=login, id=self.next_id(), type=type)
            return self.users[login]

    def repo_by_name(self, owner: str, name: str) -> Repo | None:
        with self.lock:
            for repo in self.repos.values():
                if repo.owner.login.lower() == owner.lower() and repo.name.lower() == name.lower():
                    return repo
            return None

    def installation_for(self, account: str) -> Installation:
        """The App's installation on `account`, created on first use."""
        with self.lock:
            for inst in self.installations.values():
                if inst.account.login == account:
                    return inst
            owner = self.user(account)
            inst = Installation(id=self.next_id(), account=owner)
            self.installations[inst.id] = inst
            return inst

    def mint_token(self, installation_id: int) -> tuple[str, Token]:
        """A `ghs_` token well over 40 characters: clients must not assume the old length."""
        token = "ghs_" + secrets.token_urlsafe(48).replace("-", "A").replace("_", "b")
        record = Token(installation_id=installation_id, expires_at=utcnow() + self.token_ttl)
        with self.lock:
            self.tokens[token] = record
        return token, record

    def valid_token(self, token: str) -> Token | None:
        with self.lock:
            record = self.tokens.get(token)
        if record is None or record.expires_at <= utcnow():
            return None
        return record

    def mint_user_token(self, login: str) -> str:
        """A `ghu_` token that expires after 8 hours, like a GitHub App's user access token."""
        token = "ghu_" + secrets.token_urlsafe(27).replace("-", "A").replace("_", "b")[:36]
        with self.lock:
            self.user_tokens[token] = UserToken(login=login, expires_at=utcnow() + dt.timedelta(hours=8))
        return token

    def valid_user_token(self, token: str) -> UserToken | None:
        with self.lock:
            record = self.user_tokens.get(token)
        if record is None or record.expires_at <= utcnow():
            return None
        return record

    def permission(self, repo: Repo, login: str) -> str | None:
        """The user's role on the repo; the owner is admin; None means not a collaborator."""
        with self.lock:
            if login == repo.owner.login:
                return "admin"
            perm = self.permissions.get((repo.id, login))
            return None if perm in (None, "none") else perm

    def combined_statuses(self, repo_id: int, sha: str) -> list[Status]:
        """Latest status per context (contexts compare case-insensitively), newest first."""
        with self.lock:
            latest: dict[str, Status] = {}
            for status in self.statuses:
                if status.repo_id == repo_id and status.sha == sha:
                    latest[status.context.lower()] = status
            return sorted(latest.values(), key=lambda s: s.id, reverse=True)

    @property
    def rate_limited(self) -> list[LoggedRequest]:
        """Every request answered with a primary or secondary rate-limit refusal (enforced or injected)."""
        with self.lock:
            return [r for r in self.requests if r.rate_limit is not None]

    def count_requests(self, method: str | None = None, path_prefix: str = "") -> int:
        """How many API calls were made, for tests asserting "no request to GitHub at all"."""
        with self.lock:
            return sum(
                1 for r in self.requests if (method is None or r.method == method) and r.path.startswith(path_prefix)
            )
