"""The GitHub calls behind "Sign in with GitHub": code → user token → login and readable repositories.

With the setup flow, the only place where the web tier calls GitHub, and only when a person signs in.
The user token lives in this module's locals for the length of one sign-in; it is never logged or stored.
"""

from __future__ import annotations

import logging
from typing import Any

import httpx

log = logging.getLogger(__name__)

PER_PAGE = 100
MAX_PAGES = 30  # 3,000 installations or repositories per installation: a bound on one sign-in's time
_API_HEADERS = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}


class SignInError(Exception):
    """Sign-in failed; `status` is the page's HTTP status and `reason` says why, without any secret."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


async def user_token(web_url: str, client_id: str, client_secret: str, code: str, redirect_uri: str) -> str:
    """POST /login/oauth/access_token; GitHub reports a bad code as HTTP 200 with an `error` field."""
    form = {"client_id": client_id, "client_secret": client_secret, "code": code, "redirect_uri": redirect_uri}
    async with _client() as client:
        body = await _json(client, "POST", f"{web_url}/login/oauth/access_token", data=form)
    error, token = body.get("error"), body.get("access_token")
    if error == "bad_verification_code":
        raise SignInError(401, "GitHub refused the sign-in code: it was already used or has expired. Sign in again.")
    if error:
        log.warning("sign-in: GitHub refused the token exchange: %s", error)
        raise SignInError(
            502,
            f"GitHub refused the token exchange ({error}); check GITHUB_CLIENT_ID and "
            "GITHUB_CLIENT_SECRET, and that the App's callback URL is this server's /auth/callback.",
        )
    if not isinstance(token, str) or not token:
        raise SignInError(502, "GitHub's answer to the token exchange has no access token.")
    return token


async def visible_repos(api_url: str, token: str, app_id: int) -> tuple[str, list[str]]:
    """The person's login and the full names of the repositories of this App's installations they can read."""
    headers = {**_API_HEADERS, "Authorization": f"Bearer {token}"}
    async with _client(headers) as client:
        login = (await _json(client, "GET", f"{api_url}/user")).get("login")
        if not isinstance(login, str) or not login:
            raise SignInError(502, "GitHub's answer to GET /user has no login.")
        installations = await _pages(client, f"{api_url}/user/installations", "installations")
        names: list[str] = []
        for inst in installations:
            if inst.get("app_id") == app_id and isinstance(inst.get("id"), int):
                url = f"{api_url}/user/installations/{inst['id']}/repositories"
                names += [r["full_name"] for r in await _pages(client, url, "repositories") if _named(r)]
    return login, names


def _named(repo: dict[str, Any]) -> bool:
    return isinstance(repo.get("full_name"), str)


def _client(headers: dict[str, str] | None = None) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=15, headers={"User-Agent": "plangate", "Accept": "application/json", **(headers or {})}
    )


async def _json(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> dict[str, Any]:
    try:
        response = await client.request(method, url, **kwargs)
    except httpx.HTTPError as exc:
        raise SignInError(502, f"GitHub could not be reached ({type(exc).__name__}).") from None
    path = httpx.URL(url).path
    if not response.is_success:
        log.warning("sign-in: GitHub answered HTTP %s to %s %s", response.status_code, method, path)
        raise SignInError(502, f"GitHub answered HTTP {response.status_code} to {method} {path}.")
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise SignInError(502, f"GitHub's answer to {method} {path} is not a JSON object.")
    return body


async def _pages(client: httpx.AsyncClient, url: str, key: str) -> list[dict[str, Any]]:
    """Every item of a `{"total_count", key: [...]}` list, page by page."""
    items: list[dict[str, Any]] = []
    for page in range(1, MAX_PAGES + 1):
        body = await _json(client, "GET", url, params={"per_page": PER_PAGE, "page": page})
        batch = body.get(key)
        if not isinstance(batch, list):
            raise SignInError(502, f"GitHub's answer to GET {httpx.URL(url).path} has no {key} list.")
        items += [item for item in batch if isinstance(item, dict)]
        total = body.get("total_count")
        if len(batch) < PER_PAGE or (isinstance(total, int) and len(items) >= total):
            break
    return items
