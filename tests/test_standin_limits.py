"""The stand-in enforces GitHub's rate limits: `x-ratelimit-*` on every REST answer, counted per installation, App
and client; 403 at 0 remaining until the reset; the secondary limit on creating content, with a right `retry-after`."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Iterator
from pathlib import Path

import gidgethub
import httpx
import pytest
from gidgethub.httpx import GitHubAPI

from standin import StandIn, start
from standin.auth import Caller
from standin.limits import Limits, Window
from standin.state import Repo
from tests.standin_client import app_jwt, client, make_key, mint

START = 1_700_000_000.0


class Clock:
    """Epoch seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def key() -> str:
    return make_key()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def gh(tmp_path: Path, key: str, clock: Clock) -> Iterator[StandIn]:
    standin = StandIn(tmp_path / "git", key, app_id=4242, limits=Limits(clock=clock))
    with start(standin):
        yield standin


@pytest.fixture
def repo(gh: StandIn) -> Repo:
    return gh.create_repo("acme", "infra", {"main.tf": 'resource "terraform_data" "a" {}\n'})


def limits_of(r: httpx.Response) -> tuple[int, int, int, int, str]:
    h = r.headers
    fields = ("limit", "remaining", "used", "reset")
    return (*(int(h[f"x-ratelimit-{name}"]) for name in fields), h["x-ratelimit-resource"])  # type: ignore[return-value]


# -- headers and counting ----------------------------------------------------------------------------


def test_headers_count_down_per_installation_app_and_address(gh: StandIn, key: str, repo: Repo) -> None:
    reset = int(START) + 3600
    gh.create_repo("other", "thing", {"a": "b"})
    token, again = mint(gh, key, repo), mint(gh, key, repo)
    with client(gh, f"token {token}") as c, client(gh, f"Bearer {again}") as same_installation:
        assert limits_of(c.get("/repos/acme/infra/issues")) == (5000, 4999, 1, reset, "core")
        assert limits_of(same_installation.get("/repos/acme/infra/pulls/99")) == (5000, 4998, 2, reset, "core")  # 404
        assert limits_of(c.post("/repos/acme/infra/issues", json={"title": "x"})) == (5000, 4997, 3, reset, "core")
    other = gh.state.repo_by_name("other", "thing")
    assert other is not None
    with client(gh, f"token {mint(gh, key, other)}") as c:
        assert limits_of(c.get("/repos/other/thing/issues"))[1] == 4999
    with client(gh, f"Bearer {app_jwt(key)}") as c:  # the App's JWT: three mints so far, then this
        assert limits_of(c.get("/app"))[:3] == (5000, 4996, 4)
    with client(gh) as c:
        assert limits_of(c.get("/repos/acme/infra/issues"))[:3] == (60, 59, 1)  # unauthenticated: per address
    with client(gh, "token ghs_revoked") as c:
        assert limits_of(c.get("/app"))[:3] == (60, 58, 2)


def test_git_and_the_web_flow_are_not_the_rest_api(gh: StandIn, key: str, repo: Repo) -> None:
    basic = base64.b64encode(f"x-access-token:{mint(gh, key, repo)}".encode()).decode()
    with client(gh, f"Basic {basic}") as c:
        refs = c.get("/acme/infra.git/info/refs", params={"service": "git-upload-pack"})
    assert refs.status_code == 200 and "x-ratelimit-limit" not in refs.headers
    with httpx.Client(base_url=gh.base_url) as c:
        assert "x-ratelimit-limit" not in c.get("/login/oauth/authorize").headers


# -- primary limit -----------------------------------------------------------------------------------


def test_primary_limit_engages_at_zero_and_lifts_at_the_reset(gh: StandIn, key: str, repo: Repo, clock: Clock) -> None:
    pr = gh.open_pr(repo, "feature", "alice", "Change", {"main.tf": "# changed\n"}, deliver=False)
    url = f"/repos/acme/infra/issues/{pr.number}/comments"
    gh.limits.core = 3
    token = mint(gh, key, repo)
    with client(gh, f"token {token}") as c:
        assert [limits_of(c.get(url))[1] for _ in range(3)] == [2, 1, 0]
        clock.now += 1800
        refused = c.post(url, json={"body": "plan"})
        assert refused.status_code == 403
        assert refused.json() == {
            "message": f"API rate limit exceeded for installation ID {repo.installation_id}.",
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits",
            "status": "403",
        }
        assert limits_of(refused) == (3, 0, 3, int(START) + 3600, "core")
        assert gh.comments_on(repo, pr.number) == []
        assert c.get(url).status_code == 403  # reads too, until the reset
        clock.now = START + 3600
        assert c.post(url, json={"body": "plan"}).status_code == 201
        assert limits_of(c.get(url)) == (3, 1, 2, int(clock.now) + 3600, "core")
    assert [(r.method, r.status, r.rate_limit) for r in gh.state.rate_limited] == [
        ("POST", 403, "primary"),
        ("GET", 403, "primary"),
    ]


def test_gidgethub_reads_the_primary_refusal(gh: StandIn, key: str, repo: Repo) -> None:
    gh.limits.core = 1
    token = mint(gh, key, repo)

    async def run() -> gidgethub.RateLimitExceeded:
        async with httpx.AsyncClient() as http:
            github = GitHubAPI(http, "plangate-tests", base_url=gh.base_url)
            await github.getitem("/repos/acme/infra/issues", oauth_token=token)
            with pytest.raises(gidgethub.RateLimitExceeded) as caught:
                await github.getitem("/repos/acme/infra/issues", oauth_token=token)
            return caught.value

    exceeded = asyncio.run(run())
    assert exceeded.rate_limit.remaining == 0 and exceeded.rate_limit.reset_datetime.timestamp() == START + 3600


# -- secondary limit ---------------------------------------------------------------------------------


def test_secondary_limit_past_the_window_with_a_right_retry_after(
    gh: StandIn, key: str, repo: Repo, clock: Clock
) -> None:
    gh.limits.content = [Window(20, 10.0)]
    url = "/repos/acme/infra/issues"
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        for i in range(20):
            clock.now = START + i * 0.25
            assert c.post(url, json={"title": f"issue {i}"}).status_code == 201
        clock.now = START + 5
        assert c.get(url).status_code == 200  # reads are not content
        refused = c.post(url, json={"title": "one too many"})
        assert refused.status_code == 403 and refused.headers["retry-after"] == "5"
        assert refused.json()["message"].startswith(
            "You have exceeded a secondary rate limit and have been temporarily blocked from content creation."
        )
        assert refused.json()["documentation_url"].endswith("#about-secondary-rate-limits")
        assert int(refused.headers["x-ratelimit-remaining"]) > 0
        clock.now = START + 9.99
        assert c.patch(f"{url}/1", json={"state": "closed"}).headers["retry-after"] == "1"  # at least 1
        clock.now = START + 10  # the first issue's slot is free again, the second one's not yet
        assert c.post(url, json={"title": "in the freed slot"}).status_code == 201
        assert c.post(url, json={"title": "too soon"}).headers["retry-after"] == "1"
    titles = [i.title for i in gh.state.issues.values()]
    assert len(titles) == 21 and "one too many" not in titles and "too soon" not in titles
    assert gh.state.issues[(repo.id, 1)].state == "open"  # the refused PATCH did nothing
    assert [r.rate_limit for r in gh.state.rate_limited] == ["secondary"] * 3


def test_secondary_limit_counts_per_installation_and_not_token_minting(
    gh: StandIn, key: str, repo: Repo, clock: Clock
) -> None:
    gh.limits.content = [Window(2, 60.0)]
    other = gh.create_repo("other", "thing", {"a": "b"})
    tokens = [mint(gh, key, repo) for _ in range(3)]  # POSTs with the App's JWT, none of them content
    with client(gh, f"token {tokens[0]}") as c, client(gh, f"token {tokens[1]}") as same:
        assert c.post("/repos/acme/infra/issues", json={"title": "a"}).status_code == 201
        assert same.post("/repos/acme/infra/issues", json={"title": "b"}).status_code == 201
        assert c.post("/repos/acme/infra/issues", json={"title": "c"}).status_code == 403
    with client(gh, f"token {mint(gh, key, other)}") as c:
        assert c.post("/repos/other/thing/issues", json={"title": "a"}).status_code == 201


def test_githubs_limits_by_default(gh: StandIn, key: str, repo: Repo, clock: Clock) -> None:
    assert (Limits().core, Limits().unauthenticated, tuple(Limits().content)) == (
        5000,
        60,
        (Window(80, 60.0), Window(500, 3600.0)),
    )
    with client(gh, f"token {mint(gh, key, repo)}") as c:
        made = [c.post("/repos/acme/infra/issues", json={"title": str(i)}).status_code for i in range(81)]
    assert made == [201] * 80 + [403]


def test_the_hourly_content_window(clock: Clock) -> None:
    limits = Limits(clock=clock)
    who = Caller("installation", "1")
    for minute in range(7):
        clock.now = START + minute * 61
        verdicts = [limits.admit(who, "POST", "/repos/a/b/issues") for _ in range(80)]
        assert all(v.refusal is None for v in verdicts[: 500 - minute * 80])
    refused = [v for v in verdicts if v.refusal is not None]
    assert len(refused) == 7 * 80 - 500 and refused[0].refusal is not None
    assert refused[0].refusal.headers["retry-after"] == str(3600 - 6 * 61)


def test_reset_forgets_every_count(gh: StandIn, key: str, repo: Repo) -> None:
    token = mint(gh, key, repo)
    with client(gh, f"token {token}") as c:
        c.get("/repos/acme/infra/issues")
        gh.limits.reset()
        assert limits_of(c.get("/repos/acme/infra/issues"))[1] == 4999
