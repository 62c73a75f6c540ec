"""Who may approve destroys and re-plan, asked of the GitHub stand-in through a real gidgethub client."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
from gidgethub.httpx import GitHubAPI

from core.config import DestroyApprovers
from standin.facade import StandIn
from standin.server import Running, start
from tests.keys import rsa_pem
from workers.adapters.github.auth import TokenCache, installation_client
from workers.adapters.github.authors import Authors
from workers.adapters.github.permissions import COULD_NOT_VERIFY, Permission, may_approve, may_plan

APP_ID = 77
REPO = "acme/infra"
WRITE = DestroyApprovers()


def closed_port() -> int:
    """A port nothing listens on: bound, read, released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def github(tmp_path: Path) -> Iterator[tuple[StandIn, Running]]:
    gh = StandIn(tmp_path / "gh", rsa_pem(), app_id=APP_ID, token_ttl=dt.timedelta(minutes=60))
    repo = gh.create_repo("acme", "infra", {"README.md": "x\n"})
    for login, perm in [
        ("wanda", "write"),
        ("mona", "maintain"),
        ("tri", "triage"),
        ("reed", "read"),
        ("gone", "none"),
        ("author", "admin"),
    ]:
        gh.set_permission(repo, login, perm)
    gh.add_user("stranger")
    gh.add_user("helper[bot]", type="Bot")
    gh.set_permission(repo, "helper[bot]", "write")
    gh.add_team_member("acme", "sre", "reed")
    gh.add_team_member("acme", "other", "tri")
    with start(gh) as server:
        yield gh, server


def _approve_all(
    cache: TokenCache, inst: int, base_url: str, cases: list[tuple[str, str, DestroyApprovers]]
) -> list[Permission]:
    async def run() -> list[Permission]:
        async with installation_client(cache, inst, base_url) as gh:
            return [
                await may_approve(
                    gh,
                    repo=REPO,
                    login=login,
                    user_type="Bot" if login.endswith("[bot]") else "User",
                    authors=Authors({"author": "opened this pull request"}),
                    policy=policy,
                )
                for login, _, policy in cases
            ]

    return asyncio.run(run())


CASES: list[tuple[str, str, DestroyApprovers]] = [
    # (login, expected reason, policy)
    ("wanda", "+@wanda has write permission on acme/infra", WRITE),
    ("mona", "+@mona has maintain permission on acme/infra", WRITE),
    ("acme", "+@acme has admin permission on acme/infra", WRITE),  # the owner
    ("tri", "-@tri has triage permission on acme/infra; approving destroys needs write or higher", WRITE),
    ("reed", "-@reed has read permission on acme/infra; approving destroys needs write or higher", WRITE),
    ("gone", "-@gone is not a collaborator on acme/infra; approving destroys needs write or higher", WRITE),
    ("stranger", "-@stranger is not a collaborator on acme/infra", WRITE),
    ("nosuchuser", "-@nosuchuser is not a collaborator on acme/infra", WRITE),
    # role_name, not the legacy `permission` (which says "write" for maintain) decides
    ("mona", "+@mona has maintain permission on acme/infra", DestroyApprovers(permission="maintain")),
    (
        "wanda",
        "-@wanda has write permission on acme/infra; approving destroys needs maintain or higher",
        DestroyApprovers(permission="maintain"),
    ),
    (
        "mona",
        "-@mona has maintain permission on acme/infra; approving destroys needs admin or higher",
        DestroyApprovers(permission="admin"),
    ),
    # listed users and teams
    ("Reed", "+@Reed is listed in destroy_approvers.users", DestroyApprovers(users=("reed",))),
    ("stranger", "+@stranger is listed in destroy_approvers.users", DestroyApprovers(users=("stranger",))),
    ("reed", "+@reed is a member of team acme/sre", DestroyApprovers(teams=("acme/other", "acme/sre"))),
    (
        "tri",
        "-@tri has triage permission on acme/infra; approving destroys needs write or higher, "
        "or membership in team acme/sre",
        DestroyApprovers(teams=("acme/sre",)),
    ),
    ("gone", "-@gone is not a collaborator", DestroyApprovers(teams=("acme/sre", "nosuch/team"))),
    # the author, and bots
    ("author", "-@author opened this pull request; destroys need someone else's approval here", WRITE),
    ("AUTHOR", "-@AUTHOR opened this pull request", DestroyApprovers(users=("author",))),
    ("author", "+@author has admin permission on acme/infra", DestroyApprovers(allow_self_approval=True)),
    ("helper[bot]", "-@helper[bot] is a bot; bots never approve destroys", DestroyApprovers(users=("helper",))),
]


def test_may_approve_against_the_standin(github: tuple[StandIn, Running], redis_conn: redis.Redis) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
    results = _approve_all(cache, next(iter(gh.state.installations)), server.base_url, CASES)
    for (login, expected, _), got in zip(CASES, results, strict=True):
        assert got.allowed == (expected[0] == "+"), (login, got)
        assert got.reason.startswith(expected[1:]), (login, got.reason)


def test_checks_ask_only_what_they_need(github: tuple[StandIn, Running], redis_conn: redis.Redis) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)
    inst = next(iter(gh.state.installations))
    before = gh.state.count_requests("GET")
    _approve_all(cache, inst, server.base_url, [("helper[bot]", "", WRITE), ("author", "", WRITE)])
    assert gh.state.count_requests("GET") == before  # bots and authors are refused without asking
    _approve_all(cache, inst, server.base_url, [("wanda", "", DestroyApprovers(teams=("acme/sre",)))])
    assert gh.state.count_requests("GET", "/repos/acme/infra/collaborators/wanda/permission") == 1
    assert gh.state.count_requests("GET", "/orgs/") == 0  # permission sufficed: no team lookup


def test_may_plan(github: tuple[StandIn, Running], redis_conn: redis.Redis) -> None:
    gh, server = github
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)

    async def run() -> list[Permission]:
        async with installation_client(cache, next(iter(gh.state.installations)), server.base_url) as client:
            return [
                await may_plan(client, REPO, "wanda", "User"),
                await may_plan(client, REPO, "author", "User"),
                await may_plan(client, REPO, "tri", "User"),
                await may_plan(client, REPO, "stranger", "User"),
                await may_plan(client, REPO, "helper[bot]", "Bot"),
            ]

    wanda, author, tri, stranger, bot = asyncio.run(run())
    assert wanda == Permission(True, "@wanda has write permission on acme/infra")
    assert author.allowed  # the PR author may re-plan their own PR
    assert tri == Permission(False, "@tri has triage permission on acme/infra; /plan needs write or higher")
    assert stranger == Permission(False, "@stranger is not a collaborator on acme/infra; /plan needs write or higher")
    assert bot == Permission(False, "@helper[bot] is a bot; bots cannot run /plan")


def test_a_repo_the_installation_cannot_see_refuses(github: tuple[StandIn, Running], redis_conn: redis.Redis) -> None:
    gh, server = github
    gh.create_repo("elsewhere", "secret", {"README.md": "x\n"}, installed=False)
    cache = TokenCache(redis_conn, app_id=APP_ID, private_key=rsa_pem(), api_url=server.base_url)

    async def run() -> Permission:
        async with installation_client(cache, next(iter(gh.state.installations)), server.base_url) as client:
            return await may_approve(
                client, repo="elsewhere/secret", login="elsewhere", user_type="User", authors=Authors(), policy=WRITE
            )

    assert not asyncio.run(run()).allowed


def test_a_closed_port_refuses_and_never_allows() -> None:
    async def run() -> list[Permission]:
        async with httpx.AsyncClient(timeout=5) as http:
            client = GitHubAPI(http, "plangate-test", oauth_token="ghs_x", base_url=f"http://127.0.0.1:{closed_port()}")
            return [
                await may_approve(
                    client,
                    repo=REPO,
                    login="wanda",
                    user_type="User",
                    authors=Authors({"a": "opened this pull request"}),
                    policy=WRITE,
                ),
                await may_approve(
                    client,
                    repo=REPO,
                    login="wanda",
                    user_type="User",
                    authors=Authors(),
                    policy=DestroyApprovers(teams=("acme/sre",)),
                ),
                await may_plan(client, REPO, "wanda", "User"),
            ]

    assert asyncio.run(run()) == [Permission(False, COULD_NOT_VERIFY)] * 3


def _answering(status: int, body: object, team_status: int = 404) -> httpx.MockTransport:
    """GitHub answering the permission route with (status, body), and team routes with team_status."""

    def handle(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "application/json"}
        if status == 403:
            headers.update({"x-ratelimit-remaining": "0", "x-ratelimit-limit": "5000", "x-ratelimit-reset": "1"})
        if "/orgs/" in request.url.path:
            return httpx.Response(team_status, headers=headers, content=json.dumps({"message": "x"}).encode())
        return httpx.Response(status, headers=headers, content=json.dumps(body).encode())

    return httpx.MockTransport(handle)


@pytest.mark.parametrize(
    ("status", "body", "team_status"),
    [
        (502, {"message": "Bad Gateway"}, 404),
        (500, {"message": "boom"}, 404),
        (403, {"message": "API rate limit exceeded"}, 404),
        (401, {"message": "Bad credentials"}, 404),
        (200, ["not", "an", "object"], 404),
        (200, {"permission": "superuser", "role_name": "superuser"}, 404),  # no known role: fail closed
        (200, {}, 404),
        (200, {"permission": "read", "role_name": "read"}, 403),  # team lookup not permitted
        (200, {"permission": "read", "role_name": "read"}, 500),
    ],
)
def test_any_api_error_refuses_with_try_again(status: int, body: object, team_status: int) -> None:
    async def run() -> tuple[Permission, Permission]:
        async with httpx.AsyncClient(transport=_answering(status, body, team_status)) as http:
            client = GitHubAPI(http, "plangate-test", oauth_token="ghs_x")
            policy = DestroyApprovers(teams=("acme/sre",))
            approve = await may_approve(
                client, repo=REPO, login="wanda", user_type="User", authors=Authors(), policy=policy
            )
            return approve, await may_plan(client, REPO, "wanda", "User")

    approve, plan = asyncio.run(run())
    assert approve == Permission(False, COULD_NOT_VERIFY)
    if team_status == 404:  # /plan never looks at teams
        assert plan == Permission(False, COULD_NOT_VERIFY)


def test_custom_role_falls_back_to_its_base_permission() -> None:
    """A custom repository role is ranked by the legacy base permission GitHub reports beside it."""

    async def run(perm: str) -> Permission:
        transport = _answering(200, {"permission": perm, "role_name": "deployer"})
        async with httpx.AsyncClient(transport=transport) as http:
            client = GitHubAPI(http, "plangate-test", oauth_token="ghs_x")
            return await may_approve(client, repo=REPO, login="c", user_type="User", authors=Authors(), policy=WRITE)

    assert asyncio.run(run("write")) == Permission(True, "@c has write permission on acme/infra")
    assert not asyncio.run(run("read")).allowed
    assert not asyncio.run(run("none")).allowed
