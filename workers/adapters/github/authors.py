"""Who made a pull request's change, as GitHub and plangate's sealed records say: none of them may
approve its destroys (unless `allow_self_approval`).

The opener is not the only author. Anyone with write access can push to any branch of the
repository, a colleague's PR and a bot-opened PR included, and can write any name into a commit. So
the authors are: the PR's opener; every login GitHub's repository activity shows pushing to its head
branch (and every `synchronize` sender plangate recorded, sealed, for the case GitHub's activity is
not readable: a fork, or a server without the endpoint); and every commit author and committer GitHub
maps to a login. GitHub lists at most 250 commits of a PR: past that, who authored the rest cannot be
proven, and self-approval decisions are refused rather than guessed. So are they when a bot pushed or
committed (a writer's workflow pushes as `github-actions[bot]`: whose change it carries cannot be
known), unless the default branch's `destroy_approvers.trusted_bots` lists that bot.

A change can also reach the apply branch without being applied (its apply blocked, failed or
superseded): its destroys then show up in the next change of the project. The authors of every push
of a project since its last successful apply stay its authors (`unapplied`), sealed in Redis, until
an apply of it succeeds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core import redis_keys
from plumbing.records import Records

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

    def merged(self, other: Authors) -> Authors:
        """Both lists: the first reason given for a login stands."""
        why = dict(self.why)
        for login, what in other.why.items():
            if self.role(login) is None:
                why.setdefault(login, what)
        return Authors(why, self.unproven or other.unproven)


def is_bot(login: str, user_type: str = "") -> bool:
    return user_type == "Bot" or login.casefold().endswith("[bot]")


def _untrusted_bot(why: Mapping[str, str], bots: Iterable[str], trusted: Iterable[str]) -> str | None:
    """Why the list cannot be proven when a bot nobody trusts pushed or committed."""
    allowed = {b.casefold() for b in trusted}
    for bot in bots:
        if bot.casefold() not in allowed:
            return (
                f"@{bot} {why.get(bot, 'pushed or committed here')}, and whose change a bot carries cannot be "
                "known (destroy_approvers.trusted_bots on the default branch can trust it)"
            )
    return None


def of_push(logins: Iterable[str]) -> Authors:
    """A direct push: the pusher and every commit author and committer with a login (from the webhook)."""
    return Authors({login: "pushed this commit or authored one of its commits" for login in logins if login})


def record_pusher(records: Records, repo_id: int, pr: int, login: str) -> None:
    """A `synchronize` sender: sealed, one field per login (two pushes never overwrite each other)."""
    records.hset(redis_keys.pushers(repo_id, pr), login, "pushed to this pull request's branch")
    records.conn.expire(redis_keys.pushers(repo_id, pr), redis_keys.GATE_TTL)


async def of_pull(
    gh: GitHubAPI,
    records: Records,
    *,
    repo: str,
    repo_id: int,
    pull: Mapping[str, Any],
    trusted_bots: Iterable[str] = (),
) -> Authors:
    """Everyone who made the pull request `pull` (GitHub's pull object). GitHub errors propagate: the
    callers refuse (fail closed) rather than decide on a partial list."""
    number = int(pull["number"])
    opener = pull["user"]
    why: dict[str, str] = {str(opener["login"]): "opened this pull request"}
    bots = [str(opener["login"])] if is_bot(str(opener["login"]), str(opener.get("type") or "")) else []
    for login, what in records.hgetall(redis_keys.pushers(repo_id, number)).items():
        why.setdefault(login, what)
        bots += [login] if is_bot(login) else []
    pushers, pushing_bots = await _pushers(gh, repo, pull)
    commits, committing_bots, unproven = await _commits(gh, repo, pull)
    for login, what in [*pushers.items(), *commits.items()]:
        why.setdefault(login, what)
    untrusted = _untrusted_bot(why, [*bots, *pushing_bots, *committing_bots], trusted_bots)
    return Authors(why, unproven or untrusted)


async def _pushers(gh: GitHubAPI, repo: str, pull: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Who GitHub says pushed to the PR's head branch (its repository activity), and which of them are
    bots. A fork's activity, or a server without the endpoint, answers 404/403: the sealed
    `synchronize` senders stand in then."""
    head = pull.get("head") or {}
    head_repo = str((head.get("repo") or {}).get("full_name") or repo)
    ref = quote(f"refs/heads/{head.get('ref') or ''}", safe="/")
    found: dict[str, str] = {}
    bots: list[str] = []
    try:
        async for item in gh.getiter(f"/repos/{head_repo}/activity?ref={ref}&per_page=100"):
            actor = item.get("actor") or {}
            login = actor.get("login")
            if item.get("activity_type") in PUSHES and isinstance(login, str) and login:
                found.setdefault(login, f"pushed to this pull request's branch ({str(item.get('after'))[:7]})")
                bots += [login] if is_bot(login, str(actor.get("type") or "")) else []
    except BadRequest as exc:
        if exc.status_code not in (HTTPStatus.NOT_FOUND, HTTPStatus.FORBIDDEN):
            raise
    return found, bots


async def _commits(gh: GitHubAPI, repo: str, pull: Mapping[str, Any]) -> tuple[dict[str, str], list[str], str | None]:
    """Commit authors and committers GitHub maps to a login, which of them are bots, and why that list
    may be incomplete."""
    found: dict[str, str] = {}
    bots: list[str] = []
    listed = 0
    async for commit in gh.getiter(f"/repos/{repo}/pulls/{int(pull['number'])}/commits?per_page=100"):
        listed += 1
        short = str(commit.get("sha") or "")[:7]
        for role, did in (("author", "authored"), ("committer", "committed")):
            user = commit.get(role) or {}
            login = user.get("login")
            if isinstance(login, str) and login and login != GITHUB_COMMITTER:
                found.setdefault(login, f"{did} commit {short}")
                bots += [login] if is_bot(login, str(user.get("type") or "")) else []
    total = pull.get("commits")
    if (isinstance(total, int) and total > listed) or (not isinstance(total, int) and listed >= MAX_LISTED_COMMITS):
        count = f"{total:,}" if isinstance(total, int) else f"{MAX_LISTED_COMMITS} or more"
        return (
            found,
            bots,
            (
                f"this pull request has {count} commits and GitHub lists only {MAX_LISTED_COMMITS}, "
                "so who authored the others cannot be proven"
            ),
        )
    return found, bots, None


UNPROVEN_FIELD = "(unproven)"  # no GitHub login can hold parentheses


def record_unapplied(records: Records, repo_id: int, identity: str, authors: Authors) -> None:
    """A push of the project is about to be applied: its authors stay the project's authors until an
    apply of it succeeds (a blocked, failed or superseded apply leaves its change on the branch)."""
    key = redis_keys.unapplied_authors(repo_id, identity)
    for login, why in authors.why.items():
        records.hset(key, login, f"{why} in a change not applied yet")
    if authors.unproven:  # a list that could not be proven complete stays so: nobody is cleared until applied
        records.hset(key, UNPROVEN_FIELD, f"{authors.unproven} (in a change not applied yet)")
    records.conn.expire(key, redis_keys.GATE_TTL)


def unapplied(records: Records, repo_id: int, identity: str) -> Authors:
    """The authors of the project's pushes since its last successful apply."""
    why = dict(records.hgetall(redis_keys.unapplied_authors(repo_id, identity)))
    unproven = why.pop(UNPROVEN_FIELD, None)
    return Authors(why, unproven)


def applied(records: Records, repo_id: int, identity: str) -> None:
    """An apply of the project succeeded: the changes its earlier authors made are applied."""
    records.conn.delete(redis_keys.unapplied_authors(repo_id, identity))
