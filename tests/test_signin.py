"""GitHub sign-in end to end over real HTTP: a browser, plangate web and the GitHub stand-in.

The httpx client plays the browser: it follows GitHub's redirects and keeps cookies; the stand-in answers
`/login/oauth/authorize` for whoever `sign_in_browser` names.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import redis
import uvicorn

from bot import auth_pages
from bot.app import create_app
from plumbing import settings
from plumbing.runlog import record_run
from standin import StandIn, start
from standin.local_redis import free_port
from tests.keys import rsa_pem
from tests.test_status_page import Parsed

HTML = {"Accept": "text/html,application/xhtml+xml"}
EXCHANGE = "/login/oauth/access_token"


@dataclass
class Site:
    gh: StandIn
    url: str


@pytest.fixture
def site(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> Iterator[Site]:
    """The stand-in holding acme/infra (alice may read it) and acme/secret (she may not), and plangate web."""
    gh = StandIn(tmp_path / "git", rsa_pem(), app_id=4242)
    infra = gh.create_repo("acme", "infra", {"README.md": "x\n"}, private=True)
    gh.create_repo("acme", "secret", {"README.md": "x\n"}, private=True)
    gh.set_permission(infra, "alice", "read")
    for repo, summary in (("acme/infra", "infra plan"), ("acme/secret", "secret plan")):
        record_run(redis_conn, kind="plan", repo=repo, number=1, project="p", sha="d" * 40, summary=summary)
        record_run(redis_conn, kind="drift", repo=repo, project=f"{summary} drift", sha="e" * 40, gate="failure")
    port = free_port()
    gh.app.callback_urls = [f"http://127.0.0.1:{port}/auth/callback"]
    with start(gh) as server:
        env = {
            "GITHUB_WEBHOOK_SECRET": "s",
            "REDIS_URL": redis_url,
            "GITHUB_API_URL": server.base_url,
            "GITHUB_APP_ID": "4242",
            "GITHUB_CLIENT_ID": gh.app.client_id,
            "GITHUB_CLIENT_SECRET": gh.app.client_secret,
        }
        web = uvicorn.Server(uvicorn.Config(create_app(settings.load(env)), port=port, log_level="warning"))
        thread = threading.Thread(target=web.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not web.started and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            yield Site(gh, f"http://127.0.0.1:{port}")
        finally:
            web.should_exit = True
            thread.join(10)


def browser() -> httpx.Client:
    return httpx.Client(headers=HTML, follow_redirects=True, timeout=10)


def test_alice_sees_only_the_repositories_she_can_read(
    site: Site, redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    site.gh.sign_in_browser("alice")
    with browser() as alice:
        page = alice.get(site.url + "/")
        assert page.status_code == 200, page.text
        assert [r.status_code for r in page.history] == [302, 302, 303]  # to GitHub, back, to the page
        assert "acme/infra" in page.text and "infra plan" in page.text and "infra plan drift" in page.text
        assert "acme/secret" not in page.text and "secret plan" not in page.text
        assert "Signed in as" in page.text and "@alice" in page.text
        set_cookie = page.history[-1].headers["set-cookie"].lower()
        assert "httponly" in set_cookie and "samesite=lax" in set_cookie and "max-age=3600" in set_cookie
        assert "secure" not in set_cookie  # served over http here; https gets Secure (test_status_auth)
        stored = b" ".join(redis_conn.dump(k) or b"" for k in redis_conn.keys("*"))
        cookies = " ".join(f"{c.name}={c.value}" for c in alice.cookies.jar)
        assert b"ghu_" not in stored and "ghu_" not in cookies and "ghu_" not in caplog.text
        assert site.gh.app.client_secret not in caplog.text
        assert alice.get(site.url + "/metrics").status_code == 401  # the session is not for scrapers

        out = alice.get(site.url + "/auth/signout")
        assert out.status_code == 200 and "signed out" in out.text
        again = alice.get(site.url + "/", follow_redirects=False)
        assert again.status_code == 302 and "/login/oauth/authorize?" in again.headers["location"]


def test_someone_who_can_read_nothing_gets_an_empty_page(site: Site) -> None:
    site.gh.sign_in_browser("mallory")
    with browser() as mallory:
        page = mallory.get(site.url + "/")
    assert page.status_code == 200
    assert "You cannot read any repository this App is installed on" in page.text
    assert "acme/" not in page.text and "plan" not in page.text.split("<h1>plangate</h1>")[1].split("Queues")[0]


def _authorize(client: httpx.Client, url: str) -> tuple[str, str]:
    """Start a sign-in and let the stand-in answer: the callback URL's code and state."""
    to_github = client.get(url + "/", follow_redirects=False)
    assert to_github.status_code == 302
    back = client.get(to_github.headers["location"], follow_redirects=False)
    query = parse_qs(urlsplit(back.headers["location"]).query)
    return query["code"][0], query["state"][0]


def test_a_state_that_is_not_this_browsers_is_refused_before_any_call(site: Site) -> None:
    site.gh.sign_in_browser("alice")
    before = site.gh.state.count_requests("POST", EXCHANGE)
    with browser() as alice, browser() as stranger:
        code, state = _authorize(alice, site.url)
        for client, params in (
            (alice, {"code": code, "state": state + "x"}),
            (alice, {"code": code}),
            (stranger, {"code": code, "state": state}),  # alice's state without alice's cookie
        ):
            answer = client.get(site.url + "/auth/callback", params=params)
            assert answer.status_code == 400 and "state does not match" in answer.text
            assert "Sign in again" in answer.text
    assert site.gh.state.count_requests("POST", EXCHANGE) == before


def test_a_replayed_code_is_refused(site: Site) -> None:
    site.gh.sign_in_browser("alice")
    with browser() as alice:
        code, state = _authorize(alice, site.url)
        assert alice.get(site.url + "/auth/callback", params={"code": code, "state": state}).status_code == 200
        alice.get(site.url + "/auth/signout")
        _, fresh_state = _authorize(alice, site.url)
        replay = alice.get(site.url + "/auth/callback", params={"code": code, "state": fresh_state})
    assert replay.status_code == 401 and "already used or has expired" in replay.text


def test_declining_on_github_is_refused_with_githubs_reason(site: Site) -> None:
    site.gh.sign_in_browser("alice", approve=False)
    with browser() as alice:
        answer = alice.get(site.url + "/")
    assert answer.status_code == 401 and "The user has denied your application access." in answer.text
    assert site.gh.state.count_requests("POST", EXCHANGE) == 0


def test_hostile_values_stay_text_on_the_sign_in_pages() -> None:
    """GitHub's error text and the status page's URL (built from X-Forwarded-* headers) are text, never markup."""
    hostile = """alice's "app" </p><script>alert(1)</script>"""
    status_url = 'https://gate.example.org/"><script>alert(2)</script>/'
    refused, signed_out = auth_pages.refused(401, hostile, status_url), auth_pages.signed_out(status_url)
    assert (refused.status_code, signed_out.status_code) == (401, 200)
    for page in (refused, signed_out):
        parsed = Parsed(bytes(page.body).decode())
        assert [tag for tag, _ in parsed.tags] == ["html", "head", "meta", "title", "body", "h1", "p", "p", "a"]
        assert parsed.attrs("a", "href") == [status_url]
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert hostile in Parsed(bytes(refused.body).decode()).joined()
