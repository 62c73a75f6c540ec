"""Injected faults reach a real HTTP client exactly as GitHub's bad minutes do: 5xx, rate-limit refusals, dropped
connections before and after the work, consumed in order and only by the requests they match."""

from __future__ import annotations

import asyncio
import re
import time

import anyio
import gidgethub
import httpx
import pytest
from gidgethub.httpx import GitHubAPI

from standin import StandIn
from standin.state import Repo
from tests.standin_client import client, mint

COMMENTS = r"/repos/acme/infra/issues/\d+/comments"
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID "
)
SECONDARY_DOCS = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"


@pytest.fixture
def pr_number(gh: StandIn, repo: Repo) -> int:
    return gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False).number


def comment_url(number: int) -> str:
    return f"/repos/acme/infra/issues/{number}/comments"


def logged_posts(gh: StandIn) -> list[tuple[int, bool]]:
    """(status, fault) of every POST the stand-in logged under an issue."""
    return [(r.status, r.fault) for r in gh.state.requests if r.method == "POST" and "/issues/" in r.path]


# -- status answers ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (500, "Server Error"),
        (502, "Server Error"),
        (503, "No server is currently available to service your request. Sorry about that. "),
        (504, "We couldn't respond to your request in time. Sorry about that. "),
    ],
)
def test_server_error_does_no_work_and_has_githubs_body(
    gh: StandIn, repo: Repo, api: httpx.Client, pr_number: int, status: int, message: str
) -> None:
    gh.faults.add("POST", COMMENTS, status=status)
    r = api.post(comment_url(pr_number), json={"body": "plan"})
    assert r.status_code == status
    assert r.json()["message"].startswith(message) and set(r.json()) == {"message"}
    assert "x-ratelimit-remaining" not in r.headers  # like the 502 GitHub's front end sends
    assert gh.comments_on(repo, pr_number) == []
    assert api.post(comment_url(pr_number), json={"body": "plan"}).status_code == 201
    assert logged_posts(gh) == [(status, True), (201, False)]


def test_any_status_headers_and_body(gh: StandIn, api: httpx.Client, pr_number: int) -> None:
    gh.faults.add("GET", COMMENTS, status=418, headers={"x-why": "teapot"}, body={"message": "I'm a teapot"})
    gh.faults.add("GET", COMMENTS, status=502, headers={"content-type": "text/html"}, body=b"<h1>Unicorn!</h1>")
    teapot = api.get(comment_url(pr_number))
    assert (teapot.status_code, teapot.headers["x-why"], teapot.json()) == (418, "teapot", {"message": "I'm a teapot"})
    unicorn = api.get(comment_url(pr_number))
    assert (unicorn.status_code, unicorn.headers["content-type"]) == (502, "text/html")
    assert unicorn.text == "<h1>Unicorn!</h1>"
    assert api.get(comment_url(pr_number)).status_code == 200


# -- rate-limit refusals -----------------------------------------------------------------------------


def test_secondary_limit_with_and_without_retry_after(gh: StandIn, repo: Repo, api: httpx.Client) -> None:
    gh.faults.secondary_limit("POST", "/repos/acme/infra/issues", retry_after=30)
    gh.faults.secondary_limit("POST", "/repos/acme/infra/issues")
    gh.faults.secondary_limit("POST", "/repos/acme/infra/issues", retry_after=5, status=429)
    first = api.post("/repos/acme/infra/issues", json={"title": "Drift"})
    assert (first.status_code, first.headers["retry-after"]) == (403, "30")
    body = first.json()
    assert body["message"] == SECONDARY + first.headers["x-github-request-id"] + "."
    assert (body["documentation_url"], body["status"]) == (SECONDARY_DOCS, "403")
    assert int(first.headers["x-ratelimit-remaining"]) > 0  # a secondary limit, not the primary one
    second = api.post("/repos/acme/infra/issues", json={"title": "Drift"})
    assert second.status_code == 403 and "retry-after" not in second.headers
    third = api.post("/repos/acme/infra/issues", json={"title": "Drift"})
    assert (third.status_code, third.headers["retry-after"], third.json()["status"]) == (429, "5", "429")
    assert gh.state.issues == {}
    assert [(r.status, r.rate_limit) for r in gh.state.rate_limited] == [(403, "secondary")] * 2 + [(429, "secondary")]
    assert api.post("/repos/acme/infra/issues", json={"title": "Drift"}).status_code == 201


def test_primary_limit(gh: StandIn, key: str, repo: Repo, pr_number: int) -> None:
    gh.faults.primary_limit("POST", COMMENTS, reset_in_seconds=120)
    token = mint(gh, key, repo)
    with client(gh, f"token {token}") as c:
        r = c.post(comment_url(pr_number), json={"body": "plan"})
    assert r.status_code == 403
    assert r.json()["message"] == f"API rate limit exceeded for installation ID {repo.installation_id}."
    assert r.json()["documentation_url"].endswith("#about-primary-rate-limits")
    headers = {k: r.headers[f"x-ratelimit-{k}"] for k in ("limit", "remaining", "used", "resource")}
    assert headers == {"limit": "5000", "remaining": "0", "used": "5000", "resource": "core"}
    assert 118 <= int(r.headers["x-ratelimit-reset"]) - time.time() <= 121
    assert gh.comments_on(repo, pr_number) == [] and gh.state.rate_limited[-1].rate_limit == "primary"

    gh.faults.primary_limit("POST", COMMENTS)

    async def gidgethub_sees() -> gidgethub.RateLimitExceeded:
        async with httpx.AsyncClient() as http:
            github = GitHubAPI(http, "plangate-tests", base_url=gh.base_url)
            with pytest.raises(gidgethub.RateLimitExceeded) as caught:
                await github.post(comment_url(pr_number), data={"body": "plan"}, oauth_token=token)
            return caught.value

    assert asyncio.run(gidgethub_sees()).rate_limit.remaining == 0


# -- dropped connections -----------------------------------------------------------------------------


def test_dropped_connection_gives_no_answer_and_does_no_work(
    gh: StandIn, repo: Repo, api: httpx.Client, pr_number: int
) -> None:
    gh.faults.add("POST", COMMENTS, drop=True)
    with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
        api.post(comment_url(pr_number), json={"body": "plan"})
    assert gh.comments_on(repo, pr_number) == []
    dropped = gh.state.requests[-1]
    assert (dropped.method, dropped.status, dropped.fault) == ("POST", 0, True)
    assert api.post(comment_url(pr_number), json={"body": "plan"}).status_code == 201  # a new connection


def test_gidgethub_sees_a_dropped_connection_as_a_transport_error(
    gh: StandIn, key: str, repo: Repo, pr_number: int
) -> None:
    gh.faults.add("GET", COMMENTS, drop=True)
    token = mint(gh, key, repo)

    async def run() -> None:
        async with httpx.AsyncClient() as http:
            github = GitHubAPI(http, "plangate-tests", base_url=gh.base_url)
            with pytest.raises(httpx.TransportError):
                await github.getitem(comment_url(pr_number), oauth_token=token)
            assert await github.getitem(comment_url(pr_number), oauth_token=token) == []

    asyncio.run(run())


def test_answer_lost_after_the_comment_was_stored(gh: StandIn, repo: Repo, api: httpx.Client, pr_number: int) -> None:
    gh.faults.add("POST", COMMENTS, after_store=True)
    with pytest.raises(httpx.TransportError):
        api.post(comment_url(pr_number), json={"body": "plan <!-- plangate -->"})
    stored = gh.comments_on(repo, pr_number)
    assert [c.body for c in stored] == ["plan <!-- plangate -->"]
    assert [x["id"] for x in api.get(comment_url(pr_number)).json()] == [stored[0].id]  # a client can look first
    assert logged_posts(gh) == [(0, True)]


def test_after_store_with_a_status(gh: StandIn, api: httpx.Client) -> None:
    gh.faults.add("POST", "/repos/acme/infra/issues", status=502, after_store=True)
    r = api.post("/repos/acme/infra/issues", json={"title": "plangate: apply blocked"})
    assert (r.status_code, r.json()) == (502, {"message": "Server Error"})
    assert [i.title for i in gh.state.issues.values()] == ["plangate: apply blocked"]


# -- matching and order ------------------------------------------------------------------------------


def test_faults_answer_in_order_and_only_matching_requests(
    gh: StandIn, repo: Repo, api: httpx.Client, pr_number: int
) -> None:
    first = gh.faults.add("POST", COMMENTS, status=502, times=2)
    second = gh.faults.add("POST", COMMENTS, status=503)
    assert api.get(comment_url(pr_number)).status_code == 200  # another method
    assert api.post("/repos/acme/infra/issues", json={"title": "x"}).status_code == 201  # another path
    statuses = [api.post(comment_url(pr_number), json={"body": "x"}).status_code for _ in range(4)]
    assert statuses == [502, 502, 503, 201]
    assert (first.hits, second.hits, gh.faults.pending) == (2, 1, [])
    assert len(gh.comments_on(repo, pr_number)) == 1


def test_the_pattern_must_match_the_whole_path(gh: StandIn, api: httpx.Client, pr_number: int) -> None:
    gh.faults.add("POST", "/repos/acme/infra/issues", status=500)
    assert api.post(comment_url(pr_number), json={"body": "x"}).status_code == 201
    assert api.post("/repos/acme/infra/issues?x=1", json={"title": "x"}).status_code == 500  # the query is no part


def test_clear_and_pending(gh: StandIn, api: httpx.Client, pr_number: int) -> None:
    fault = gh.faults.add("GET", COMMENTS, status=500, times=3)
    assert api.get(comment_url(pr_number)).status_code == 500
    assert gh.faults.pending == [fault] and fault.hits == 1
    gh.faults.clear()
    assert gh.faults.pending == [] and api.get(comment_url(pr_number)).status_code == 200


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"status": 502, "drop": True},
        {"drop": True, "body": {"message": "x"}},
        {"status": 99},
        {"status": 500, "times": 0},
        {"status": 500, "path_regex": "(unclosed"},
    ],
)
def test_a_fault_that_cannot_happen_is_refused(gh: StandIn, kwargs: dict[str, object]) -> None:
    path = str(kwargs.pop("path_regex", COMMENTS))
    with pytest.raises((ValueError, re.error)):
        gh.faults.add("POST", path, **kwargs)  # type: ignore[arg-type]
    assert gh.faults.pending == []


def test_latency_delays_every_answer_as_the_network_would(
    gh: StandIn, api: httpx.Client, pr_number: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    real = anyio.sleep

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await real(0)

    monkeypatch.setattr(anyio, "sleep", sleep)
    assert api.get(comment_url(pr_number)).status_code == 200 and waits == []  # no latency unless asked
    gh.faults.latency = 0.3
    assert api.get(comment_url(pr_number)).status_code == 200 and waits == [0.3]
