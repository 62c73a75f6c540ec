"""Who made a pull request's change, as GitHub and plangate's sealed records say: none of them may
approve its destroys (unless `allow_self_approval`).

The opener is not the only author. Anyone with write access can push to any branch of the
repository, a colleague's PR and a bot-opened PR included, and can write any name into a commit. So
the authors are: the PR's opener; every login GitHub's repository activity shows pushing to its head
branch (and every `synchronize` sender plangate recorded, sealed, for the case GitHub's activity is
not readable: a fork, or a server without the endpoint); and every commit author and committer GitHub
maps to a login. GitHub lists at most 250 commits of a PR: past that, who authored the rest cannot be
proven, and self-approval decisions are refused rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core import keys
from workers.adapters.store.records import Records

MAX_LISTED_COMMITS = 250  # GitHub's cap on GET /pulls/{n}/commits
PUSHES = frozenset({"push", "force_push", "branch_creation"})
GITHUB_COMMITTER = "web-flow"  # GitHub's own committer of web edits and merges: nobody's approval


@dataclass(frozen=True)
class Authors:
    """Who made a change, each with what they did (for the refusal that names them)."""

    why: Mapping[str, str] = field(default_factory=dict)  # login → "opened this pull request", …
    unproven: str | None = None  # why someone may be missing: nobody can be cleared of authorship then

    def role(self, login: str) -> str | None:
        """What `login` did, when an author (GitHub logins are case-insensitive)."""
        wanted = login.casefold()
        return next((why for who, why in self.why.items() if who.casefold() == wanted), None)

    @property
    def logins(self) -> tuple[str, ...]:
        return tuple(self.why)

    def describe(self) -> str:
        """For blocked and refused texts: every author and why they count."""
        found = [f"@{login} ({why})" for login, why in self.why.items()]
        text = ", ".join(found) if found else "nobody known"
        return text + (f"; {self.unproven}" if self.unproven else "")


def of_push(logins: Iterable[str]) -> Authors:
    """A direct push: the pusher and every commit author and committer with a login (from the webhook)."""
    return Authors({login: "pushed this commit or authored one of its commits" for login in logins if login})


def record_pusher(records: Records, repo_id: int, pr: int, login: str) -> None:
    """A `synchronize` sender: sealed, one field per login (two pushes never overwrite each other)."""
    records.hset(keys.pushers(repo_id, pr), login, "pushed to this pull request's branch")
    records.conn.expire(keys.pushers(repo_id, pr), keys.GATE_TTL)


async def of_pull(gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, pull: Mapping[str, Any]) -> Authors:
    """Everyone who made the pull request `pull` (GitHub's pull object). GitHub errors propagate: the
    callers refuse (fail closed) rather than decide on a partial list."""
    number = int(pull["number"])
    why: dict[str, str] = {str(pull["user"]["login"]): "opened this pull request"}
    for login, what in records.hgetall(keys.pushers(repo_id, number)).items():
        why.setdefault(login, what)
    for login, what in (await _pushers(gh, repo, pull)).items():
        why.setdefault(login, what)
    commits, unproven = await _commits(gh, repo, pull)
    for login, what in commits.items():
        why.setdefault(login, what)
    return Authors(why, unproven)


async def _pushers(gh: GitHubAPI, repo: str, pull: Mapping[str, Any]) -> dict[str, str]:
    """Who GitHub says pushed to the PR's head branch (its repository activity). A fork's activity, or a
    server without the endpoint, answers 404/403: the sealed `synchronize` senders stand in then."""
    head = pull.get("head") or {}
    head_repo = str((head.get("repo") or {}).get("full_name") or repo)
    ref = quote(f"refs/heads/{head.get('ref') or ''}", safe="/")
    found: dict[str, str] = {}
    try:
        async for item in gh.getiter(f"/repos/{head_repo}/activity?ref={ref}&per_page=100"):
            actor = (item.get("actor") or {}).get("login")
            if item.get("activity_type") in PUSHES and isinstance(actor, str) and actor:
                found.setdefault(actor, f"pushed to this pull request's branch ({str(item.get('after'))[:7]})")
    except BadRequest as exc:
        if exc.status_code not in (HTTPStatus.NOT_FOUND, HTTPStatus.FORBIDDEN):
            raise
    return found


async def _commits(gh: GitHubAPI, repo: str, pull: Mapping[str, Any]) -> tuple[dict[str, str], str | None]:
    """Commit authors and committers GitHub maps to a login; and why that list may be incomplete."""
    found: dict[str, str] = {}
    listed = 0
    async for commit in gh.getiter(f"/repos/{repo}/pulls/{int(pull['number'])}/commits?per_page=100"):
        listed += 1
        short = str(commit.get("sha") or "")[:7]
        for role, did in (("author", "authored"), ("committer", "committed")):
            login = (commit.get(role) or {}).get("login")
            if isinstance(login, str) and login and login != GITHUB_COMMITTER:
                found.setdefault(login, f"{did} commit {short}")
    total = pull.get("commits")
    if (isinstance(total, int) and total > listed) or (not isinstance(total, int) and listed >= MAX_LISTED_COMMITS):
        count = f"{total:,}" if isinstance(total, int) else f"{MAX_LISTED_COMMITS} or more"
        return found, (
            f"this pull request has {count} commits and GitHub lists only {MAX_LISTED_COMMITS}, "
            "so who authored the others cannot be proven"
        )
    return found, None
