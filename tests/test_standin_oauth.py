"""The stand-in's GitHub sign-in: the web flow's two steps and the user-token routes, as GitHub documents them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from standin import StandIn, start
from standin.state import utcnow
from tests.keys import rsa_pem
from tests.openapi import problems, response_schema

CALLBACK = "http://plangate.test/auth/callback"
LENIENT = frozenset({"Repository"})


@pytest.fixture
def gh(tmp_path: Path) -> Iterator[StandIn]:
    standin = StandIn(tmp_path / "git", rsa_pem(), app_id=4242, callback_urls=[CALLBACK])
    with start(standin):
        yield standin


@pytest.fixture
def repos(gh: StandIn) -> None:
    """acme/infra readable by alice; acme/secret not; bob/own is bob's; acme/public is public and not hers."""
    infra = gh.create_repo("acme", "infra", {"README.md": "x\n"}, private=True)
    gh.create_repo("acme", "secret", {"README.md": "x\n"}, private=True)
    gh.create_repo("acme", "public", {"README.md": "x\n"})
    gh.create_repo("bob", "own", {"README.md": "x\n"})
    gh.create_repo("acme", "uninstalled", {"README.md": "x\n"}, installed=False)
    gh.set_permission(infra, "alice", "read")
    gh.set_permission(infra, "carol", "none")


def authorize(gh: StandIn, **params: str) -> httpx.Response:
    query = {"client_id": gh.app.client_id, "redirect_uri": CALLBACK, "state": "s1", **params}
    return httpx.get(f"{gh.base_url}/login/oauth/authorize", params=query)


def code_for(gh: StandIn, login: str) -> str:
    gh.sign_in_browser(login)
    answer = authorize(gh)
    assert answer.status_code == 302, answer.text
    sent = urlsplit(answer.headers["location"])
    assert f"{sent.scheme}://{sent.netloc}{sent.path}" == CALLBACK
    query = parse_qs(sent.query)
    assert query["state"] == ["s1"]
    return query["code"][0]


def exchange(gh: StandIn, code: str, **overrides: str) -> dict[str, Any]:
    form = {"client_id": gh.app.client_id, "client_secret": gh.app.client_secret, "code": code, **overrides}
    answer = httpx.post(f"{gh.base_url}/login/oauth/access_token", data=form, headers={"Accept": "application/json"})
    assert answer.status_code == 200  # errors too: GitHub answers them with HTTP 200
    body: dict[str, Any] = answer.json()
    return body


def token_for(gh: StandIn, login: str) -> str:
    token: str = exchange(gh, code_for(gh, login), redirect_uri=CALLBACK)["access_token"]
    return token


def api(gh: StandIn, path: str, token: str | None) -> httpx.Response:
    headers = {"Accept": "application/vnd.github+json", **({"Authorization": f"Bearer {token}"} if token else {})}
    return httpx.get(f"{gh.base_url}{path}", headers=headers)


def test_a_code_becomes_a_user_token_once(gh: StandIn) -> None:
    code = code_for(gh, "alice")
    token = exchange(gh, code, redirect_uri=CALLBACK)
    assert token["access_token"].startswith("ghu_") and token["token_type"] == "bearer" and token["scope"] == ""
    assert token["expires_in"] == 28800 and token["refresh_token"].startswith("ghr_")
    again = exchange(gh, code)
    assert again["error"] == "bad_verification_code" and "access_token" not in again
    assert again["error_description"] == "The code passed is incorrect or expired."


def test_token_errors_are_githubs(gh: StandIn) -> None:
    assert exchange(gh, "0123456789abcdef0123")["error"] == "bad_verification_code"
    code = code_for(gh, "alice")
    assert exchange(gh, code, client_secret="wrong")["error"] == "incorrect_client_credentials"
    assert exchange(gh, code, redirect_uri="http://elsewhere.test/cb")["error"] == "redirect_uri_mismatch"
    expired = code_for(gh, "alice")
    gh.state.oauth_codes[expired].expires_at = utcnow() - dt.timedelta(seconds=1)
    assert exchange(gh, expired)["error"] == "bad_verification_code"


def test_without_accept_json_the_answer_is_form_encoded(gh: StandIn) -> None:
    form = {"client_id": gh.app.client_id, "client_secret": gh.app.client_secret, "code": code_for(gh, "alice")}
    answer = httpx.post(f"{gh.base_url}/login/oauth/access_token", data=form)
    assert answer.headers["content-type"].startswith("application/x-www-form-urlencoded")
    assert parse_qs(answer.text)["token_type"] == ["bearer"]


def test_authorize_errors(gh: StandIn) -> None:
    gh.sign_in_browser("alice")
    assert authorize(gh, client_id="Iv1.unknown").status_code == 404
    mismatch = authorize(gh, redirect_uri="http://evil.test/cb")
    assert mismatch.status_code == 302 and mismatch.headers["location"].startswith(CALLBACK + "?")
    query = parse_qs(urlsplit(mismatch.headers["location"]).query)
    assert query["error"] == ["redirect_uri_mismatch"] and query["state"] == ["s1"] and "code" not in query
    gh.sign_in_browser("alice", approve=False)
    denied = parse_qs(urlsplit(authorize(gh).headers["location"]).query)
    assert denied["error"] == ["access_denied"] and "code" not in denied
    gh.sign_in_browser(None)
    login = authorize(gh)
    assert login.status_code == 200 and "Sign in" in login.text


@pytest.mark.usefixtures("repos")
def test_a_user_sees_only_installations_and_repos_they_can_read(gh: StandIn) -> None:
    alice = token_for(gh, "alice")
    me = api(gh, "/user", alice)
    assert me.status_code == 200 and me.json()["login"] == "alice"
    assert problems(me.json(), response_schema("users/get-authenticated"), LENIENT) == []
    listed = api(gh, "/user/installations", alice)
    assert problems(listed.json(), response_schema("apps/list-installations-for-authenticated-user"), LENIENT) == []
    assert listed.json()["total_count"] == 1
    (inst,) = listed.json()["installations"]
    assert inst["account"]["login"] == "acme" and inst["app_id"] == 4242
    repos = api(gh, f"/user/installations/{inst['id']}/repositories", alice)
    schema = response_schema("apps/list-installation-repos-for-authenticated-user")
    assert problems(repos.json(), schema, LENIENT) == []
    assert [r["full_name"] for r in repos.json()["repositories"]] == ["acme/infra"]
    assert repos.json()["repositories"][0]["permissions"] == {
        "pull": True, "triage": False, "push": False, "maintain": False, "admin": False,
    }  # fmt: skip
    bob = token_for(gh, "bob")
    (own,) = api(gh, "/user/installations", bob).json()["installations"]
    assert own["account"]["login"] == "bob"
    assert api(gh, f"/user/installations/{inst['id']}/repositories", bob).status_code == 404
    carol = token_for(gh, "carol")
    assert api(gh, "/user/installations", carol).json() == {"total_count": 0, "installations": []}


@pytest.mark.usefixtures("repos")
def test_user_routes_need_a_user_token(gh: StandIn) -> None:
    for path in ("/user", "/user/installations", "/user/installations/1/repositories"):
        assert api(gh, path, None).status_code == 401
        bad = api(gh, path, "ghu_" + "x" * 36)
        assert bad.status_code == 401 and bad.json()["message"] == "Bad credentials"
    installation_token, _ = gh.state.mint_token(next(iter(gh.state.installations)))
    assert api(gh, "/user/installations", installation_token).status_code == 403
