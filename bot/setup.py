"""GitHub App manifest flow: `/setup` offers a button that creates the App, `/setup/callback` stores its credentials.

Served only while no App is configured (and until one callback succeeded in this process), and only to
whoever enters the one-time code this process logged at start-up (bot/setup_code.py): the App created here
is the one plangate trusts. It is the one place where the web tier calls GitHub: once, driven by the
operator, to turn GitHub's code into credentials.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import httpx
import yaml
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from bot import envfile, setup_code, setup_pages, signing
from bot.urls import github_web_url, public_base_url
from plumbing import settings as settings_module
from plumbing.setting_values import SettingsError
from plumbing.settings import Settings

log = logging.getLogger(__name__)

STATE_COOKIE = "plangate_setup_state"
STATE_TTL = 3600  # GitHub's manifest codes live one hour too
_ORG = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
_CODE = re.compile(r"[A-Za-z0-9._-]{1,256}")


def env_file_path() -> Path:
    """Where the credentials go (PLANGATE_ENV_FILE, default ./.env); the lead may swap in Settings.env_file."""
    return Path(os.environ.get("PLANGATE_ENV_FILE") or ".env")


def manifest_path() -> Path:
    """PLANGATE_APP_MANIFEST, default the app-manifest.yml installed with this package."""
    return Path(os.environ.get("PLANGATE_APP_MANIFEST") or Path(__file__).resolve().parent / "app-manifest.yml")


def setup_active(settings: Settings) -> bool:
    """True while no App setting is present at all; any one of them means someone configured an App."""
    return settings.app_id is None and settings.private_key is None and settings.webhook_secret is None


def manifest(base_url: str) -> dict[str, Any]:
    """app-manifest.yml with every "{base_url}" filled in."""
    loaded = yaml.safe_load(manifest_path().read_text())
    if not isinstance(loaded, dict):
        raise ValueError(f"{manifest_path()} is not a mapping")
    filled: dict[str, Any] = _fill(loaded, base_url)
    return filled


def _fill(value: Any, base_url: str) -> Any:
    if isinstance(value, str):
        return value.replace("{base_url}", base_url)
    if isinstance(value, dict):
        return {k: _fill(v, base_url) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, base_url) for v in value]
    return value


def _state_key(code: str) -> bytes:
    """States are signed with a key derived from the setup code: only a browser that entered it holds one."""
    return signing.derive_key(code, "setup state")


def issue_state(code: str, now: float) -> tuple[str, str]:
    """A fresh state and its signed cookie, valid only while `code` is this process's setup code."""
    return signing.issue_state(_state_key(code), now)


def check_state(code: str, cookie: str | None, state: str | None, now: float) -> bool:
    """The callback's state is one issued to this browser after it entered `code`, less than STATE_TTL ago."""
    return signing.check_state(_state_key(code), cookie, state, now, STATE_TTL)


class ExchangeError(Exception):
    """The code did not become credentials; `status` is the page's HTTP status."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


async def exchange(api_url: str, code: str) -> dict[str, Any]:
    """`POST /app-manifests/{code}/conversions` (no auth): the new App with its key and webhook secret."""
    url = f"{api_url}/app-manifests/{quote(code, safe='')}/conversions"
    headers = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "plangate"}
    try:
        async with httpx.AsyncClient(timeout=15) as client:
            response = await client.post(url, headers=headers)
    except httpx.HTTPError as exc:
        raise ExchangeError(502, f"GitHub at {api_url} could not be reached ({type(exc).__name__}).") from None
    if response.status_code in (404, 422):
        raise ExchangeError(
            400,
            f"GitHub refused the code (HTTP {response.status_code}): it is unknown, expired (codes last "
            "one hour) or already used. Open /setup and create the App again.",
        )
    if not response.is_success:
        raise ExchangeError(502, f"GitHub answered HTTP {response.status_code} to the code exchange.")
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise ExchangeError(502, "GitHub's answer to the code exchange is not a JSON object.")
    return body


def credentials(app: dict[str, Any]) -> dict[str, str]:
    """The .env lines for the new App, checked by plumbing.settings exactly as `plangate web` will read them."""
    app_id, pem, secret = app.get("id"), app.get("pem"), app.get("webhook_secret")
    if isinstance(app_id, bool) or not isinstance(app_id, int) or not isinstance(pem, str):
        raise ExchangeError(502, "GitHub's answer lacks the App's id or private key.")
    values = {"GITHUB_APP_ID": str(app_id), "GITHUB_APP_PRIVATE_KEY": base64.b64encode(pem.encode()).decode()}
    if isinstance(secret, str) and secret:
        values["GITHUB_WEBHOOK_SECRET"] = secret
    client_id, client_secret = app.get("client_id"), app.get("client_secret")
    if isinstance(client_id, str) and client_id and isinstance(client_secret, str) and client_secret:
        values["GITHUB_CLIENT_ID"], values["GITHUB_CLIENT_SECRET"] = client_id, client_secret  # status page sign-in
    try:
        settings_module.load(values, need_app=True, need_webhook="GITHUB_WEBHOOK_SECRET" in values)
    except SettingsError as exc:
        raise ExchangeError(502, f"GitHub's answer is not usable: {exc}.") from None
    return values


def _app_url(app: dict[str, Any], web_url: str) -> str:
    html_url = app.get("html_url")
    if isinstance(html_url, str) and urlsplit(html_url).scheme in ("http", "https"):
        return html_url.rstrip("/")
    return f"{web_url}/apps/{quote(str(app.get('slug') or ''), safe='')}"


def _serving(request: Request) -> bool:
    settings: Settings = request.app.state.settings
    return setup_active(settings) and not getattr(request.app.state, "setup_done", False)


def _expected_code(request: Request) -> str | None:
    """The code this process logged at start-up; None where it logged none, and then nothing opens."""
    code: str | None = getattr(request.app.state, "setup_code", None)
    return code


def _existing_app(env_file: Path) -> Response | None:
    """The refusal page when the .env already names an App (or cannot be read); None to go on."""
    try:
        return setup_pages.already_created(env_file) if envfile.holds_app(env_file) else None
    except envfile.EnvFileError as exc:
        return setup_pages.error(500, str(exc))


def _not_found() -> Response:
    return PlainTextResponse("Not Found", status_code=404)


async def setup_page(request: Request) -> Response:
    """The setup code's form (403) until the right code is POSTed; then the "Create GitHub App" button,
    a form POSTing the filled manifest to GitHub, with a fresh state signed under that code."""
    if not _serving(request):
        return _not_found()
    expected, given = _expected_code(request), await setup_code.submitted(request)
    if expected is None or not setup_code.matches(expected, given):
        if given is not None:
            log.warning("setup: refused a wrong setup code")
        return setup_pages.code_needed(wrong=given is not None)
    settings: Settings = request.app.state.settings
    env_file = env_file_path()
    existing = _existing_app(env_file)
    if existing is not None:
        return existing
    org = request.query_params.get("org")
    if org is not None and not _ORG.fullmatch(org):
        return setup_pages.error(400, f"{org!r} is not a GitHub organization name.")
    base = public_base_url(request)
    web = github_web_url(settings.api_url)
    try:
        filled = manifest(base)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return setup_pages.error(500, f"The App manifest cannot be read: {exc}")
    state, cookie = issue_state(expected, time.time())
    target = f"{web}/organizations/{quote(org)}/settings/apps/new" if org else f"{web}/settings/apps/new"
    page = setup_pages.create(
        action=f"{target}?{urlencode({'state': state})}",
        manifest=filled,
        account=f"the organization {org}" if org else "your personal account",
        web_url=web,
        env_file=env_file,
    )
    page.set_cookie(
        STATE_COOKIE,
        cookie,
        max_age=STATE_TTL,
        path=f"{urlsplit(base).path}/setup",
        secure=base.startswith("https:"),
        httponly=True,
        samesite="lax",
    )
    return page


async def setup_callback(request: Request) -> Response:
    """GitHub's redirect after the App was created: check the state, exchange the code, write the .env."""
    if not _serving(request):
        return _not_found()
    settings: Settings = request.app.state.settings
    code, state = request.query_params.get("code"), request.query_params.get("state")
    if not code or not _CODE.fullmatch(code):
        return setup_pages.error(400, "The callback has no valid code. Open /setup and start again.")
    expected = _expected_code(request)
    if expected is None or not check_state(expected, request.cookies.get(STATE_COOKIE), state, time.time()):
        return setup_pages.error(
            400,
            "The state does not match one this browser got from /setup with this process's setup code (or it "
            "expired). Open /setup again.",
        )
    env_file = env_file_path()
    existing = _existing_app(env_file)
    if existing is not None:
        return existing
    try:
        app = await exchange(settings.api_url, code)
    except ExchangeError as exc:
        log.warning("setup: code exchange failed: %s", exc.reason)
        return setup_pages.error(exc.status, exc.reason)
    app_url = _app_url(app, github_web_url(settings.api_url))
    try:
        values = credentials(app)
        envfile.write(env_file, values)
    except (ExchangeError, envfile.EnvFileError) as exc:
        log.error("setup: App %s was created but its credentials were not stored: %s", app_url, exc)
        status = exc.status if isinstance(exc, ExchangeError) else 500
        return setup_pages.orphaned(app_url, str(exc), status)
    request.app.state.setup_done = True
    log.info("setup: GitHub App %s (id %s) created; credentials written to %s", app_url, app.get("id"), env_file)
    page = setup_pages.done(app_url, env_file, has_secret="GITHUB_WEBHOOK_SECRET" in values)
    page.delete_cookie(STATE_COOKIE, path=f"{urlsplit(public_base_url(request)).path}/setup")
    return page


routes: list[Route] = [
    Route("/setup", setup_page, methods=["GET", "POST"]),
    Route("/setup/callback", setup_callback, methods=["GET"]),
]
