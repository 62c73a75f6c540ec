"""Who may read `GET /` and `GET /metrics`: closed by default, the token, public mode, forged sessions."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest
import redis
from starlette.testclient import TestClient

from bot import session
from bot.app import create_app
from plumbing import settings
from plumbing.runlog import record_run

TOKEN = "status-token-0123456789abcdef"
HTML = {"Accept": "text/html,application/xhtml+xml"}
ROUTES = ("/", "/metrics")


def client(redis_url: str, **env: str) -> TestClient:
    return TestClient(create_app(settings.load({"GITHUB_WEBHOOK_SECRET": "s", "REDIS_URL": redis_url, **env})))


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture
def closed(redis_url: str, redis_conn: redis.Redis) -> Iterator[TestClient]:
    with client(redis_url) as c:
        yield c


@pytest.fixture
def with_token(redis_url: str, redis_conn: redis.Redis) -> Iterator[TestClient]:
    record_run(redis_conn, kind="plan", repo="acme/secret", number=3, project="p", sha="a" * 40, summary="s")
    with client(redis_url, PLANGATE_STATUS_TOKEN=TOKEN) as c:
        yield c


def test_closed_by_default_and_says_what_opens_it(closed: TestClient) -> None:
    for path in ROUTES:
        for headers in ({}, HTML, {"Authorization": f"Bearer {TOKEN}"}):
            answer = closed.get(path, headers=headers, follow_redirects=False)
            assert answer.status_code == 401, (path, headers)
            assert answer.headers["www-authenticate"].startswith("Bearer realm=")
            assert answer.headers["content-type"].startswith("text/plain")
            for name in ("PLANGATE_STATUS_TOKEN", "GITHUB_CLIENT_ID", "PLANGATE_STATUS_PUBLIC=true"):
                assert name in answer.text
    assert closed.get("/healthz").status_code == 200
    assert closed.get("/readyz").status_code == 200
    assert closed.post("/webhook", content=b"{}").status_code in (400, 401)  # the webhook's own checks
    assert closed.get("/setup").status_code == 404  # an App is configured: setup stays closed


def test_the_token_opens_both_routes_as_bearer_or_basic(with_token: TestClient) -> None:
    for path in ROUTES:
        assert with_token.get(path, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert with_token.get(path, headers=basic("prometheus", TOKEN)).status_code == 200
        assert with_token.get(path, headers=basic("", TOKEN)).status_code == 200
    page = with_token.get("/", headers={"Authorization": f"bearer {TOKEN}"})
    assert "acme/secret" in page.text and "Signed in as" not in page.text  # the token sees everything
    assert "plangate_deliveries_total" in with_token.get("/metrics", headers=basic("x", TOKEN)).text


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": f"Bearer {TOKEN}x"},
        {"Authorization": f"Bearer {TOKEN[:-1]}"},
        {"Authorization": "Bearer "},
        {"Authorization": f"Token {TOKEN}"},
        basic(TOKEN, "wrong"),
        {"Authorization": "Basic not-base64!"},
        {"Authorization": "Basic " + base64.b64encode(TOKEN.encode()).decode()},  # no colon: no password
    ],
)
def test_a_wrong_token_is_refused(with_token: TestClient, headers: dict[str, str]) -> None:
    for path in ROUTES:
        answer = with_token.get(path, headers=headers)
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"] == 'Basic realm="plangate", charset="UTF-8"'
        assert "not PLANGATE_STATUS_TOKEN" in answer.text and "acme/secret" not in answer.text


def test_a_browser_gets_a_basic_challenge(with_token: TestClient) -> None:
    answer = with_token.get("/", headers=HTML)
    assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Basic ")
    assert "PLANGATE_STATUS_TOKEN" in answer.text


def test_public_mode_opens_both_and_says_so_loudly(
    redis_url: str, redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="plangate")
    with client(redis_url, PLANGATE_STATUS_PUBLIC="true") as c:
        assert c.get("/").status_code == 200
        assert c.get("/metrics").status_code == 200
    warnings = [r for r in caplog.records if r.name == "plangate" and r.levelname == "WARNING"]
    assert len(warnings) == 1 and "PLANGATE_STATUS_PUBLIC=true" in warnings[0].getMessage()
    assert "ANYONE" in warnings[0].getMessage()


def test_startup_line_names_what_opens_the_page(
    redis_url: str, redis_conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="plangate")
    with client(redis_url, PLANGATE_STATUS_TOKEN=TOKEN):
        pass
    lines = [r.getMessage() for r in caplog.records if r.name == "plangate"]
    assert lines == ["status page and /metrics: PLANGATE_STATUS_TOKEN"]
    assert TOKEN not in caplog.text


# -- sessions -----------------------------------------------------------------------------------------

SIGN_IN = {"GITHUB_APP_ID": "4242", "GITHUB_CLIENT_ID": "Iv1.0123456789abcdef", "GITHUB_CLIENT_SECRET": "c" * 40}


@pytest.fixture
def signing_in(redis_url: str, redis_conn: redis.Redis) -> Iterator[TestClient]:
    record_run(redis_conn, kind="plan", repo="acme/infra", number=1, project="p", sha="b" * 40, summary="mine")
    record_run(redis_conn, kind="plan", repo="acme/secret", number=2, project="p", sha="c" * 40, summary="theirs")
    with client(redis_url, **SIGN_IN) as c:
        yield c


def cookie_for(
    conn: redis.Redis, repos: list[str], now: float | None = None, secret: str = SIGN_IN["GITHUB_CLIENT_SECRET"]
) -> str:
    return session.start(conn, session.session_key(secret), "alice", repos, time.time() if now is None else now)


def test_a_session_sees_only_its_repositories(signing_in: TestClient, redis_conn: redis.Redis) -> None:
    signing_in.cookies.set(session.SESSION_COOKIE, cookie_for(redis_conn, ["ACME/Infra"]))
    page = signing_in.get("/")
    assert page.status_code == 200
    assert "acme/infra" in page.text and "mine" in page.text
    assert "acme/secret" not in page.text and "theirs" not in page.text and "c" * 7 not in page.text
    assert "Signed in as" in page.text and "@alice" in page.text and "/auth/signout" in page.text


def test_metrics_never_take_the_session(signing_in: TestClient, redis_conn: redis.Redis) -> None:
    signing_in.cookies.set(session.SESSION_COOKIE, cookie_for(redis_conn, ["acme/infra"]))
    answer = signing_in.get("/metrics", headers=HTML)
    assert answer.status_code == 401 and "PLANGATE_STATUS_TOKEN" in answer.text


def _forgeries(conn: redis.Redis) -> list[str]:
    genuine = cookie_for(conn, ["acme/infra"])
    sid, expires, signature = genuine.split(".")
    return [
        "",
        "garbage",
        f"{sid}.{int(expires) + 3600}.{signature}",  # a longer life, same signature
        f"{sid}.{expires}.{'0' * len(signature)}",
        f"{sid[:-1]}{'B' if sid.endswith('A') else 'A'}.{expires}.{signature}",  # another session id
        cookie_for(conn, ["acme/infra"], now=time.time() - session.SESSION_TTL - 1),  # expired
        cookie_for(conn, ["acme/infra"], secret="another-client-secret"),  # signed with another key
    ]


def test_forged_or_expired_session_cookies_are_refused(signing_in: TestClient, redis_conn: redis.Redis) -> None:
    for forged in _forgeries(redis_conn):
        signing_in.cookies.set(session.SESSION_COOKIE, forged)
        answer = signing_in.get("/", follow_redirects=False)
        assert answer.status_code == 401 and "sign in with GitHub" in answer.text, forged
        browser = signing_in.get("/", headers=HTML, follow_redirects=False)
        assert browser.status_code == 302 and "/login/oauth/authorize?" in browser.headers["location"], forged


def test_a_signed_out_session_is_gone(signing_in: TestClient, redis_conn: redis.Redis) -> None:
    cookie = cookie_for(redis_conn, ["acme/infra"])
    signing_in.cookies.set(session.SESSION_COOKIE, cookie)
    out = signing_in.get("/auth/signout")
    assert out.status_code == 200 and "signed out" in out.text and 'href="http://testserver/"' in out.text
    signing_in.cookies.set(session.SESSION_COOKIE, cookie)  # a copy kept from before sign-out
    assert signing_in.get("/", follow_redirects=False).status_code == 401


def test_a_browser_is_sent_to_github_with_secure_cookies_behind_https(
    signing_in: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANGATE_PUBLIC_URL", "https://gate.example.org/plangate")
    answer = signing_in.get("/", headers=HTML, follow_redirects=False)
    assert answer.status_code == 302
    location = answer.headers["location"]
    assert location.startswith("https://github.com/login/oauth/authorize?")
    query = parse_qs(urlsplit(location).query)
    assert query["client_id"] == [SIGN_IN["GITHUB_CLIENT_ID"]] and len(query["state"][0]) >= 32
    assert query["redirect_uri"] == ["https://gate.example.org/plangate/auth/callback"]
    cookie = answer.headers["set-cookie"].lower()
    for part in ("secure", "httponly", "samesite=lax", "path=/plangate/auth", "max-age=600"):
        assert part in cookie
