"""Who made a pull request, as GitHub shows it: opener, pushers and commit authors (workers/adapters/github/authors.py),
asked of the GitHub stand-in through a real gidgethub client."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import redis
from gidgethub.abc import GitHubAPI

from core.config import DestroyApprovers
from plumbing.records import Records
from standin import Identity
from standin.facade import StandIn
from standin.server import Running, start
from standin.state import PullRequest, Repo
from tests.keys import rsa_pem
from workers.adapters.github.auth import TokenCache, installation_client
from workers.adapters.github.authors import (
    Authors,
    applied,
    of_pull,
    of_push,
    record_pusher,
    record_unapplied,
    unapplied,
)
from workers.adapters.github.permissions import may_approve

APP_ID = 78
GHOST = Identity("ghost", "nobody@example.invalid")


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[StandIn, Running, Repo]]:
    gh = StandIn(tmp_path / "gh", rsa_pem(), app_id=APP_ID, token_ttl=dt.timedelta(minutes=60))
    repo = gh.create_repo("acme", "infra", {"README.md": "x\n"})
    for login in ("carol", "alice", "bob"):
        gh.set_permission(repo, login, "write")
    with start(gh) as server:
        yield gh, server, repo


def _authors(github: tuple[StandIn, Running, Repo], conn: redis.Redis, pr: PullRequest) -> Authors:
    gh, server, repo = github
    cache = TokenCache(conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
    records = Records(conn, rsa_pem())

    async def run() -> Authors:
        async with installation_client(cache, next(iter(gh.state.installations)), server.base_url) as client:
            pull: dict[str, Any] = await client.getitem(f"/repos/{repo.full_name}/pulls/{pr.number}")
            return await of_pull(client, records, repo=repo.full_name, repo_id=repo.id, pull=pull)

    return asyncio.run(run())


def test_the_opener_and_everyone_who_pushed_or_committed(
    github: tuple[StandIn, Running, Repo], redis_conn: redis.Redis
) -> None:
    gh, _, repo = github
    pr = gh.open_pr(repo, "change", "carol", "Change", {"a.txt": "1"}, deliver=False)
    assert _authors(github, redis_conn, pr).why == {"carol": "opened this pull request"}
    gh.push_pr(pr, {"b.txt": "2"}, pusher="alice", author=GHOST, committer=GHOST, deliver=False)
    gh.push_pr(pr, {"c.txt": "3"}, pusher="carol", author="bob", committer="carol", deliver=False)
    found = _authors(github, redis_conn, pr)
    assert found.role("carol") == "opened this pull request"
    assert (found.role("ALICE") or "").startswith("pushed to this pull request's branch (")  # only GitHub's activity
    assert (found.role("bob") or "").startswith("authored commit ")
    assert found.unproven is None and "ghost" not in found.why
    assert "@alice (pushed to this pull request's branch" in found.describe()


def test_a_fork_whose_activity_cannot_be_read_falls_back_on_the_recorded_pushers(
    github: tuple[StandIn, Running, Repo], redis_conn: redis.Redis
) -> None:
    gh, _, repo = github
    gh.create_repo("mallory", "infra", {"README.md": "x\n"})
    pr = gh.open_pr(repo, "fork-change", "mallory", "From a fork", {"a.txt": "1"}, fork="mallory/infra", deliver=False)
    record_pusher(Records(redis_conn, rsa_pem()), repo.id, pr.number, "alice")
    found = _authors(github, redis_conn, pr)
    assert found.role("mallory") == "opened this pull request"
    assert found.role("alice") == "pushed to this pull request's branch"


@pytest.mark.slow
def test_past_githubs_250_commits_no_one_can_be_cleared(
    github: tuple[StandIn, Running, Repo], redis_conn: redis.Redis
) -> None:
    gh, _, repo = github
    pr = gh.open_pr(repo, "long", "carol", "Long", {"f0.txt": "0"}, deliver=False)
    for i in range(1, 251):
        gh.push_pr(pr, {f"f{i}.txt": str(i)}, deliver=False)
    found = _authors(github, redis_conn, pr)
    assert found.unproven is not None and "251 commits and GitHub lists only 250" in found.unproven


def test_a_direct_push_names_its_pusher_and_committers() -> None:
    authors = of_push(["alice", "", "bob"])
    assert authors.logins == ("alice", "bob") and authors.role("Bob") is not None and authors.unproven is None


@pytest.mark.parametrize(
    ("authors", "policy", "reason"),
    [
        (
            Authors({"carol": "opened this pull request", "alice": "pushed to this pull request's branch (abc1234)"}),
            DestroyApprovers(),
            "@alice pushed to this pull request's branch (abc1234); destroys need someone else's approval here",
        ),
        (
            Authors(
                {"carol": "opened this pull request"}, "this pull request has 300 commits and GitHub lists only 250"
            ),
            DestroyApprovers(),
            "this pull request has 300 commits and GitHub lists only 250, so @alice cannot be cleared of authoring it",
        ),
    ],
)
def test_an_author_or_an_unprovable_list_is_refused_before_github_is_asked(
    authors: Authors, policy: DestroyApprovers, reason: str
) -> None:
    never = cast(GitHubAPI, object())  # any request would fail: none is made
    got = asyncio.run(
        may_approve(never, repo="acme/infra", login="alice", user_type="User", authors=authors, policy=policy)
    )
    assert not got.allowed and got.reason.startswith(reason)
    if authors.role("alice"):
        assert "Authors of this change: @carol (opened this pull request), @alice (pushed" in got.reason


def test_a_bot_that_pushed_hides_whose_change_it_carries_unless_trusted(
    github: tuple[StandIn, Running, Repo], redis_conn: redis.Redis
) -> None:
    """A writer's workflow pushes as github-actions[bot]: nobody can be cleared of authoring that push."""
    gh, server, repo = github
    gh.add_user("github-actions[bot]", type="Bot")
    gh.set_permission(repo, "github-actions[bot]", "write")
    pr = gh.open_pr(repo, "change", "carol", "Change", {"a.txt": "1"}, deliver=False)
    gh.push_pr(pr, {"b.txt": "2"}, pusher="github-actions[bot]", author=GHOST, committer=GHOST, deliver=False)
    found = _authors(github, redis_conn, pr)
    assert found.unproven is not None and "@github-actions[bot] pushed to this pull request's branch" in found.unproven
    assert "trusted_bots" in found.unproven
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)

    async def trusted() -> Authors:
        async with installation_client(cache, next(iter(gh.state.installations)), server.base_url) as client:
            pull: dict[str, Any] = await client.getitem(f"/repos/{repo.full_name}/pulls/{pr.number}")
            return await of_pull(
                client,
                Records(redis_conn, rsa_pem()),
                repo=repo.full_name,
                repo_id=repo.id,
                pull=pull,
                trusted_bots=["GitHub-Actions[bot]"],
            )

    assert asyncio.run(trusted()).unproven is None


def test_the_authors_of_a_change_not_yet_applied_stay_authors_until_an_apply_succeeds(redis_conn: redis.Redis) -> None:
    """A blocked, failed or superseded apply leaves its change on the branch: its destroys come back in
    the project's next change, whose own authors are others."""
    records = Records(redis_conn, rsa_pem())
    record_unapplied(records, 1, "infra@default:infra", Authors({"alice": "opened this pull request"}))
    later = Authors({"bob": "opened this pull request"}).merged(unapplied(records, 1, "infra@default:infra"))
    assert later.role("bob") == "opened this pull request"
    assert later.role("alice") == "opened this pull request in a change not applied yet"
    assert unapplied(records, 1, "other@default:other").why == {}
    applied(records, 1, "infra@default:infra")
    assert unapplied(records, 1, "infra@default:infra").why == {}


def test_a_change_whose_authors_could_not_be_proven_keeps_clearing_nobody_until_applied(
    redis_conn: redis.Redis,
) -> None:
    """A merged PR with more commits than GitHub lists failed to apply: the apply that fixes it (a new
    push, `/apply`) must not clear anyone of authoring it either."""
    records = Records(redis_conn, rsa_pem())
    why = "this pull request has 300 commits and GitHub lists only 250"
    record_unapplied(records, 1, "infra@default:infra", Authors({"alice": "opened this pull request"}, why))
    later = Authors({"bob": "pushed this commit"}).merged(unapplied(records, 1, "infra@default:infra"))
    assert later.unproven is not None and "300 commits" in later.unproven
    assert later.role("(unproven)") is None and later.logins == ("bob", "alice")
    applied(records, 1, "infra@default:infra")
    assert unapplied(records, 1, "infra@default:infra").unproven is None
