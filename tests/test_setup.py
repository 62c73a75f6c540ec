"""The App manifest flow against the GitHub stand-in: the setup code, the button, the state check, the code
exchange, the .env."""

from __future__ import annotations

import datetime as dt
import html
import json
import logging
import os
import re
import socket
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bot import envfile, setup, setup_code, setup_pages, urls
from bot.app import create_setup_app
from plumbing import settings
from standin import StandIn, start
from tests.keys import rsa_pem
from tests.test_status_page import Parsed

SECRET = "0123456789abcdef0123456789abcdef01234567"
HOSTILE = '"><script>alert(1)</script>'
QUOTED = """acme's "ops" <b>team</b>"""
PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "p", "strong", "a", "code", "ol", "li",
    "table", "tr", "th", "td", "form", "input", "button", "label",
}  # fmt: skip
CONVERSIONS = "/app-manifests/"
CODE = setup_code.new()  # what this test process's setup "logged"


@pytest.fixture(scope="module")
def gh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIn]:
    standin = StandIn(tmp_path_factory.mktemp("git"), rsa_pem(), app_id=4242, webhook_secret=SECRET)
    with start(standin):
        yield standin


@pytest.fixture
def env_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / ".env"
    monkeypatch.setenv("PLANGATE_ENV_FILE", str(path))
    monkeypatch.delenv("PLANGATE_PUBLIC_URL", raising=False)
    monkeypatch.delenv("PLANGATE_APP_MANIFEST", raising=False)
    return path


def client(env: dict[str, str] | None = None) -> TestClient:
    """A small app built from the setup routes only, with settings as `plangate web` would load them and
    CODE as the setup code it logged."""
    app = Starlette(routes=setup.routes)
    app.state.settings = settings.load(env or {})
    app.state.setup_code = CODE
    return TestClient(app)


def enter_code(c: TestClient, query: str = "", code: str = CODE, **kwargs: Any) -> Any:
    """POST /setup with the code, as the form on the 403 page does."""
    return c.post(f"/setup{query}", data={"code": code}, **kwargs)


def open_setup(c: TestClient, query: str = "", headers: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """/setup with the right code; the "Create GitHub App" form's action and the manifest it posts."""
    page = enter_code(c, query, headers=headers)
    assert page.status_code == 200, page.text
    assert "Create GitHub App" in page.text and page.headers["cache-control"] == "no-store"
    action = re.search(r'<form method="post" action="([^"]*)">', page.text)
    field = re.search(r'<input type="hidden" name="manifest" value="([^"]*)">', page.text)
    assert action and field
    return html.unescape(action.group(1)), json.loads(html.unescape(field.group(1)))


def state_of(action: str) -> str:
    found = re.search(r"\?state=([A-Za-z0-9_-]+)$", action)
    assert found, action
    return found.group(1)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def read_env(path: Path) -> dict[str, str]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return dict(line.split("=", 1) for line in lines)


# -- the setup code -------------------------------------------------------------------------------


def _asks_for_the_code(page: Any) -> Parsed:
    """A 403 page with the code's form, no state cookie and no way on to GitHub."""
    assert page.status_code == 403, page.text
    assert page.headers["cache-control"] == "no-store" and "set-cookie" not in page.headers
    parsed = Parsed(page.text)
    assert parsed.attrs("form", "method") == ["post"] and parsed.attrs("form", "action") == [None]
    assert parsed.attrs("input", "name") == [setup_code.FIELD]
    assert "Create GitHub App" not in page.text and "setup code: " in page.text
    return parsed


def test_setup_asks_for_the_code_and_never_takes_it_from_the_url(gh: StandIn, env_file: Path) -> None:
    c = client({"GITHUB_API_URL": gh.base_url})
    for page in (c.get("/setup"), c.get("/setup", params={"code": CODE}), c.get("/setup", params={"org": "acme"})):
        assert "not the setup code" not in _asks_for_the_code(page).joined()
    assert not env_file.exists()


@pytest.mark.parametrize(
    "wrong",
    ["", "WRONG", CODE + "A", CODE[:-1], setup_code.new(), f"{CODE}\n{CODE}"],
    ids=["empty", "word", "longer", "shorter", "another-process", "twice"],
)
def test_a_wrong_code_is_a_403_and_nothing_else(
    gh: StandIn, env_file: Path, caplog: pytest.LogCaptureFixture, wrong: str
) -> None:
    c = client({"GITHUB_API_URL": gh.base_url})
    before = gh.state.count_requests("POST", CONVERSIONS)
    assert "That is not the setup code." in _asks_for_the_code(enter_code(c, code=wrong)).joined()
    assert gh.state.count_requests("POST", CONVERSIONS) == before and not env_file.exists()
    assert [r.getMessage() for r in caplog.records] == ["setup: refused a wrong setup code"]  # never the value


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (f"code={CODE}&code={CODE}", "application/x-www-form-urlencoded"),
        (f"code={CODE}&" + "x=" + "y" * 1100, "application/x-www-form-urlencoded"),
        (f"code={CODE}&a=1&b=2&c=3&d=4", "application/x-www-form-urlencoded"),
        (json.dumps({"code": CODE}), "application/json"),
        (f"code={CODE}", "text/plain"),
    ],
    ids=["two-codes", "too-long", "too-many-fields", "json", "text"],
)
def test_only_a_plain_form_with_one_code_counts(env_file: Path, body: str, content_type: str) -> None:
    _asks_for_the_code(client().post("/setup", content=body, headers={"Content-Type": content_type}))


def test_the_code_may_be_typed_in_lower_case_without_dashes(env_file: Path) -> None:
    for typed in (CODE.lower(), CODE.replace("-", ""), " " + CODE.replace("-", " ") + "\n"):
        assert enter_code(client(), code=typed).status_code == 200, typed


def test_no_code_logged_means_setup_never_opens(gh: StandIn, env_file: Path) -> None:
    app = Starlette(routes=setup.routes)
    app.state.settings = settings.load({"GITHUB_API_URL": gh.base_url})
    c = TestClient(app)
    for code in (CODE, ""):
        _asks_for_the_code(enter_code(c, code=code))
    state, cookie = setup.issue_state(CODE, dt.datetime.now().timestamp())
    c.cookies.set(setup.STATE_COOKIE, cookie)
    assert c.get("/setup/callback", params={"code": gh.manifest_code(), "state": state}).status_code == 400
    assert not env_file.exists()


def test_the_callback_refuses_a_flow_that_skipped_the_code(gh: StandIn, env_file: Path) -> None:
    """Only a browser that entered the code holds a state the callback accepts: one signed under any other
    code (a guess, an earlier start of the process), or none at all, is refused before GitHub is asked."""
    before = gh.state.count_requests("POST", CONVERSIONS)
    now = dt.datetime.now().timestamp()
    for forged in (setup.issue_state(setup_code.new(), now), setup.issue_state("", now), None):
        c = client({"GITHUB_API_URL": gh.base_url})
        params = {"code": gh.manifest_code(), "state": "x" * 32}
        if forged is not None:
            params["state"], cookie = forged
            c.cookies.set(setup.STATE_COOKIE, cookie)
        page = c.get("/setup/callback", params=params)
        assert page.status_code == 400 and "setup code" in page.text and "Nothing was written" in page.text
    assert gh.state.count_requests("POST", CONVERSIONS) == before
    assert not env_file.exists()


def test_the_setup_process_logs_its_code_in_one_line(env_file: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO), TestClient(create_setup_app(settings.load({}))) as c:
        (line,) = [r.getMessage() for r in caplog.records]
        found = re.fullmatch(r"setup code: ([A-Z2-9]{4}(?:-[A-Z2-9]{4}){4}) \(enter it at /setup; [^\n]*\)", line)
        assert found, line
        _asks_for_the_code(c.get("/setup"))
        assert enter_code(c, code=found[1]).status_code == 200
    with TestClient(create_setup_app(settings.load({}))) as restarted:  # a restart: a new code, the old one refused
        _asks_for_the_code(enter_code(restarted, code=found[1]))


def test_codes_are_100_bit_and_compared_whole() -> None:
    codes = {setup_code.new() for _ in range(1000)}
    assert len(codes) == 1000
    assert all(re.fullmatch(r"[A-HJ-NP-Z2-9]{4}(?:-[A-HJ-NP-Z2-9]{4}){4}", code) for code in codes)
    assert setup_code.matches(CODE, CODE) and not setup_code.matches(CODE, None)
    assert not setup_code.matches(CODE, CODE.replace("-", "_")) and not setup_code.matches(CODE, CODE[:4])


# -- the page -------------------------------------------------------------------------------------


def test_page_posts_the_manifest_with_this_hosts_urls(env_file: Path) -> None:
    action, manifest = open_setup(client())
    assert action.startswith("https://github.com/settings/apps/new?state=")
    assert manifest["url"] == "http://testserver"
    assert manifest["hook_attributes"]["url"] == "http://testserver/webhook"
    assert manifest["redirect_url"] == "http://testserver/setup/callback"
    assert manifest["callback_urls"] == ["http://testserver/auth/callback"]  # status page sign-in
    assert manifest["public"] is False
    events = {"pull_request", "issue_comment", "push", "check_run", "merge_group"}
    events |= {"pull_request_review", "pull_request_review_comment"}  # commands where reviewers work
    assert set(manifest["default_events"]) == events
    assert manifest["default_permissions"] == {
        "contents": "read",
        "pull_requests": "write",
        "issues": "write",
        "checks": "write",
        "statuses": "write",
        "merge_queues": "read",
        "metadata": "read",
        "members": "read",
    }
    assert "{base_url}" not in json.dumps(manifest)


def test_each_visit_gets_a_new_state(env_file: Path) -> None:
    c = client()
    assert state_of(open_setup(c)[0]) != state_of(open_setup(c)[0])


def test_forwarded_headers_are_honoured(env_file: Path) -> None:
    headers = {"X-Forwarded-Proto": "https, http", "X-Forwarded-Host": "plangate.example.com"}
    _, manifest = open_setup(client(), headers=headers)
    assert manifest["hook_attributes"]["url"] == "https://plangate.example.com/webhook"
    assert manifest["redirect_url"] == "https://plangate.example.com/setup/callback"


def test_malformed_forwarded_values_fall_back_to_the_request(env_file: Path) -> None:
    headers = {"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": 'evil"><script>'}
    _, manifest = open_setup(client(), headers=headers)
    assert manifest["hook_attributes"]["url"] == "http://testserver/webhook"


def test_public_url_setting_wins_over_headers(env_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANGATE_PUBLIC_URL", "https://gate.example.org/plangate/")
    _, manifest = open_setup(client(), headers={"X-Forwarded-Host": "other.example.com"})
    assert manifest["hook_attributes"]["url"] == "https://gate.example.org/plangate/webhook"
    assert manifest["redirect_url"] == "https://gate.example.org/plangate/setup/callback"


def test_org_variant(env_file: Path) -> None:
    action, _ = open_setup(client(), "?org=acme-infra")
    assert action.startswith("https://github.com/organizations/acme-infra/settings/apps/new?state=")


def test_bad_org_is_refused_and_escaped(env_file: Path) -> None:
    page = enter_code(client(), "?org=%3Cscript%3Ex")
    assert page.status_code == 400
    assert "<script>" not in page.text and "&lt;script&gt;" in page.text


def test_ghes_variant(env_file: Path) -> None:
    action, _ = open_setup(client({"GITHUB_API_URL": "https://ghe.example.com/api/v3"}), "?org=ops")
    assert action.startswith("https://ghe.example.com/organizations/ops/settings/apps/new?state=")


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com"),
        ("https://api.acme.ghe.com", "https://acme.ghe.com"),
        ("http://127.0.0.1:8123", "http://127.0.0.1:8123"),
    ],
)
def test_github_web_url(api: str, web: str) -> None:
    assert urls.github_web_url(api) == web


def test_hostile_values_stay_text_on_every_setup_page() -> None:
    """Whatever reaches a setup page (the manifest file, the org name, a path, GitHub's or the OS's error text)
    comes out as text and as the exact attribute values: the form still posts the manifest it shows."""
    manifest = {"name": HOSTILE, "hook_attributes": {"url": f"https://x/{HOSTILE}"}, "default_events": [QUOTED]}
    action = f"https://github.com/settings/apps/new?state={HOSTILE}"
    env_file = Path(f"/srv/</code>{HOSTILE}/.env")
    pages = [
        setup_pages.create(action=action, manifest=manifest, account=QUOTED, web_url=HOSTILE, env_file=env_file),
        setup_pages.done(f"https://github.com/apps/{HOSTILE}", env_file, has_secret=False),
        setup_pages.already_created(env_file),
        setup_pages.orphaned(f"https://github.com/apps/{HOSTILE}", QUOTED, 500),
        setup_pages.error(400, f"{QUOTED} {HOSTILE}"),
        setup_pages.code_needed(wrong=True),
    ]
    assert [page.status_code for page in pages] == [200, 200, 409, 500, 400, 403]
    for page in pages:
        assert {tag for tag, _ in Parsed(bytes(page.body).decode()).tags} <= PAGE_TAGS  # no script, no <b>
        assert page.headers["cache-control"] == "no-store"
    create, done, exists, orphaned, failed, _ = (Parsed(bytes(page.body).decode()) for page in pages)
    assert create.attrs("form", "action") == [action]
    assert [json.loads(v or "") for v in create.attrs("input", "value")] == [manifest]
    assert f"for {QUOTED};" in create.joined() and f"asks {HOSTILE} to" in create.joined()
    assert HOSTILE in create.joined() and str(env_file) in create.joined()
    assert done.attrs("a", "href") == [
        f"https://github.com/apps/{HOSTILE}",
        f"https://github.com/apps/{HOSTILE}/installations/new",
    ]
    assert str(env_file) in done.joined() and str(env_file) in exists.joined()
    assert f"were not stored: {QUOTED}" in orphaned.joined()
    assert f"{QUOTED} {HOSTILE}" in failed.joined()


# -- the callback ---------------------------------------------------------------------------------


def test_callback_writes_a_0600_env_that_settings_accept(gh: StandIn, env_file: Path) -> None:
    env_file.write_text("REDIS_URL=redis://cache:6379/1\nGITHUB_WEBHOOK_SECRET=stale\n")
    c = client({"GITHUB_API_URL": gh.base_url})
    state = state_of(open_setup(c)[0])
    old_umask = os.umask(0)  # the file must be 0600 whatever the umask
    try:
        done = c.get("/setup/callback", params={"code": gh.manifest_code(), "state": state})
    finally:
        os.umask(old_umask)
    assert done.status_code == 200, done.text
    assert f'href="{gh.base_url}/apps/plangate/installations/new"' in done.text
    assert "Restart plangate" in done.text
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    written = read_env(env_file)
    assert written["REDIS_URL"] == "redis://cache:6379/1"
    assert list(written) == [
        "REDIS_URL",
        "GITHUB_APP_ID",
        "GITHUB_APP_PRIVATE_KEY",
        "GITHUB_WEBHOOK_SECRET",
        "GITHUB_CLIENT_ID",
        "GITHUB_CLIENT_SECRET",
    ]
    loaded = settings.load(written, need_app=True, need_webhook=True)
    assert loaded.app_id == 4242 and loaded.webhook_secret == SECRET
    assert loaded.status_auth.client_id == gh.app.client_id and loaded.status_auth.sign_in
    assert loaded.status_auth.client_secret == gh.app.client_secret and gh.app.client_secret not in done.text
    assert loaded.private_key is not None and loaded.private_key.strip() == rsa_pem().strip()
    assert SECRET not in done.text and "PRIVATE KEY" not in done.text
    assert sorted(p.name for p in env_file.parent.iterdir()) == [".env"]  # no temp file left behind
    assert c.get("/setup").status_code == 404  # closed once an App was stored
    assert c.get("/setup/callback", params={"code": "x", "state": state}).status_code == 404


def test_code_is_single_use(gh: StandIn, env_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = gh.manifest_code()
    first = client({"GITHUB_API_URL": gh.base_url})
    assert first.get("/setup/callback", params={"code": code, "state": state_of(open_setup(first)[0])}).is_success
    other = tmp_path / "other.env"
    monkeypatch.setenv("PLANGATE_ENV_FILE", str(other))
    second = client({"GITHUB_API_URL": gh.base_url})
    again = second.get("/setup/callback", params={"code": code, "state": state_of(open_setup(second)[0])})
    assert again.status_code == 400 and "already used" in again.text
    assert not other.exists()


def test_existing_app_is_never_overwritten(gh: StandIn, env_file: Path) -> None:
    c = client({"GITHUB_API_URL": gh.base_url})
    state = state_of(open_setup(c)[0])
    env_file.write_text("GITHUB_APP_ID=7\n")  # someone finished setup meanwhile (another tab, another process)
    assert enter_code(c).status_code == 409
    before = gh.state.count_requests("POST", CONVERSIONS)
    refused = c.get("/setup/callback", params={"code": gh.manifest_code(), "state": state})
    assert refused.status_code == 409 and "already holds" in refused.text
    assert gh.state.count_requests("POST", CONVERSIONS) == before  # the code is not burnt
    assert env_file.read_text() == "GITHUB_APP_ID=7\n"


def test_unwritable_env_file_says_the_app_exists(gh: StandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLANGATE_ENV_FILE", str(tmp_path / "missing-dir" / ".env"))
    c = client({"GITHUB_API_URL": gh.base_url})
    page = c.get("/setup/callback", params={"code": gh.manifest_code(), "state": state_of(open_setup(c)[0])})
    assert page.status_code == 500 and "cannot write" in page.text and "Delete that App" in page.text
    assert f"{gh.base_url}/apps/plangate" in page.text and SECRET not in page.text
    assert list(tmp_path.iterdir()) == []


def test_github_422_is_a_400(gh: StandIn, env_file: Path) -> None:
    c = client({"GITHUB_API_URL": gh.base_url})
    state, code, pem = state_of(open_setup(c)[0]), gh.manifest_code(), gh.app.private_key_pem
    gh.app.private_key_pem = None  # the stand-in answers 422 when it has no key to hand out
    try:
        page = c.get("/setup/callback", params={"code": code, "state": state})
    finally:
        gh.app.private_key_pem = pem
    assert page.status_code == 400 and "HTTP 422" in page.text
    assert not env_file.exists()


@pytest.mark.parametrize("expired", [True, False])
def test_bad_or_expired_code_writes_nothing(gh: StandIn, env_file: Path, expired: bool) -> None:
    code = gh.manifest_code(ttl=dt.timedelta(seconds=-1)) if expired else "0123456789abcdef0123"
    c = client({"GITHUB_API_URL": gh.base_url})
    page = c.get("/setup/callback", params={"code": code, "state": state_of(open_setup(c)[0])})
    assert page.status_code == 400 and "expired" in page.text and "Nothing was written" in page.text
    assert not env_file.exists()
    assert enter_code(c).status_code == 200  # still open: the operator can try again


def test_unreachable_github_is_a_502(env_file: Path) -> None:
    api = f"http://127.0.0.1:{closed_port()}"
    c = client({"GITHUB_API_URL": api})
    page = c.get("/setup/callback", params={"code": "abc123", "state": state_of(open_setup(c)[0])})
    assert page.status_code == 502 and "could not be reached" in page.text
    assert not env_file.exists()


def test_bad_state_is_a_400_before_any_call(gh: StandIn, env_file: Path) -> None:
    c = client({"GITHUB_API_URL": gh.base_url})
    state = state_of(open_setup(c)[0])
    before = gh.state.count_requests("POST", CONVERSIONS)
    for params in ({"code": gh.manifest_code(), "state": state + "x"}, {"code": gh.manifest_code()}):
        assert c.get("/setup/callback", params=params).status_code == 400
    stranger = client({"GITHUB_API_URL": gh.base_url})  # the right state, but not this browser's cookie
    assert stranger.get("/setup/callback", params={"code": gh.manifest_code(), "state": state}).status_code == 400
    assert gh.state.count_requests("POST", CONVERSIONS) == before
    assert not env_file.exists()


def test_state_check() -> None:
    state, cookie = setup.issue_state(CODE, 1_000_000)
    assert setup.check_state(CODE, cookie, state, 1_000_000 + setup.STATE_TTL)
    assert not setup.check_state(CODE, cookie, state, 1_000_000 + setup.STATE_TTL + 1)
    assert not setup.check_state(CODE, cookie, state, 999_999)
    value, issued, signature = cookie.split(".")
    assert not setup.check_state(CODE, f"{value}.{int(issued) + 3600}.{signature}", state, 1_000_000)
    assert not setup.check_state(CODE, f"{value}.{issued}.{'0' * len(signature)}", state, 1_000_000)
    assert not setup.check_state(CODE, cookie, None, 1_000_000)
    assert not setup.check_state(setup_code.new(), cookie, state, 1_000_000)  # another process, or a restart


@pytest.mark.parametrize(
    "env",
    [
        {"GITHUB_WEBHOOK_SECRET": "s"},
        {"GITHUB_APP_ID": "1"},
        {"GITHUB_APP_PRIVATE_KEY": rsa_pem()},
    ],
)
def test_routes_are_gone_once_configured(env: dict[str, str], env_file: Path) -> None:
    assert not setup.setup_active(settings.load(env))
    c = client(env)
    assert c.get("/setup").status_code == 404
    assert c.get("/setup/callback", params={"code": "abc", "state": "x"}).status_code == 404


def test_setup_active_when_nothing_is_set() -> None:
    assert setup.setup_active(settings.load({"REDIS_URL": "redis://r:6379/0"}))


# -- the .env writer ------------------------------------------------------------------------------


_assignment = st.builds(
    lambda export, name, value: f"{'export ' if export else ''}{name}={value}",
    st.booleans(),
    st.sampled_from(["A", "REDIS_URL", "GITHUB_APP_ID", "GITHUB_WEBHOOK_SECRET"]),
    st.from_regex(r"[a-z0-9]{0,8}", fullmatch=True),
)
_lines = st.lists(st.one_of(st.just(""), st.from_regex(r"#[ -~]{0,10}", fullmatch=True), _assignment), max_size=8)


@given(_lines, st.from_regex(r"[A-Za-z0-9+/=]{1,40}", fullmatch=True))
def test_merge_keeps_other_lines_and_assigns_once(lines: list[str], value: str) -> None:
    values = {"GITHUB_APP_ID": "12", "GITHUB_WEBHOOK_SECRET": value}
    merged = envfile.merge("\n".join(lines), values).splitlines()
    replaced = {line for line in lines if line.removeprefix("export ").split("=", 1)[0] in values}
    kept = [line for line in lines if line.strip() and line not in replaced]
    assert [line for line in merged if line in kept] == kept  # every other line, in its order
    for name, expected in values.items():
        assert [line for line in merged if line.removeprefix("export ").startswith(f"{name}=")] == [
            f"{name}={expected}"
        ]
    assert envfile.assigned("\n".join(merged)) == envfile.assigned("\n".join(kept)) | set(values)


def test_write_refuses_unsafe_values_and_tightens_mode(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("A=1\n")
    path.chmod(0o644)
    with pytest.raises(envfile.EnvFileError, match="GITHUB_WEBHOOK_SECRET"):
        envfile.write(path, {"GITHUB_WEBHOOK_SECRET": "a b\nEVIL=1"})
    assert path.read_text() == "A=1\n"
    envfile.write(path, {"GITHUB_APP_ID": "5"})
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and read_env(path) == {"A": "1", "GITHUB_APP_ID": "5"}
    with pytest.raises(envfile.EnvFileError, match="already holds GITHUB_APP_ID"):
        envfile.write(path, {"GITHUB_APP_ID": "6"})


def test_write_into_a_missing_directory_fails_cleanly(tmp_path: Path) -> None:
    with pytest.raises(envfile.EnvFileError, match="cannot write"):
        envfile.write(tmp_path / "nope" / ".env", {"GITHUB_APP_ID": "5"})
