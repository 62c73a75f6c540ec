""" "Sign in with GitHub" for the status page: GitHub's web flow with the App's own OAuth client.

`begin` sends a browser to GitHub with a signed state bound to a cookie; `/auth/callback` checks that
state, turns the code into a user token, asks GitHub which of this App's repositories the person can
read, and starts a session holding the login and those names (never the token); `/auth/signout` ends it.
The state key is HKDF of GITHUB_CLIENT_SECRET, so any web replica can finish a sign-in another began.
"""

from __future__ import annotations

import logging
import re
import time
from urllib.parse import urlencode

import redis
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from bot import auth_pages, github_user, session, signing
from bot.urls import cookie_path, github_web_url, public_base_url
from plumbing.settings import Settings

log = logging.getLogger(__name__)

STATE_COOKIE = "plangate_signin_state"
STATE_TTL = 600  # GitHub's sign-in codes live ten minutes too
_CODE = re.compile(r"[A-Za-z0-9._-]{1,256}")


def _secret(settings: Settings) -> str:
    secret = settings.status_auth.client_secret
    if secret is None:
        raise RuntimeError("sign-in used without GITHUB_CLIENT_SECRET")
    return secret


def _state_key(settings: Settings) -> bytes:
    return signing.derive_key(_secret(settings), "sign-in state")


def begin(request: Request) -> Response:
    """302 to GitHub's authorize page, with a fresh state whose signed copy this browser keeps."""
    settings: Settings = request.app.state.settings
    base = public_base_url(request)
    state, cookie = signing.issue_state(_state_key(settings), time.time())
    query = {"client_id": settings.status_auth.client_id, "state": state, "redirect_uri": f"{base}/auth/callback"}
    response = RedirectResponse(f"{github_web_url(settings.api_url)}/login/oauth/authorize?{urlencode(query)}", 302)
    response.headers["Cache-Control"] = "no-store"
    response.set_cookie(
        STATE_COOKIE,
        cookie,
        max_age=STATE_TTL,
        path=cookie_path(base, "/auth"),
        secure=base.startswith("https:"),
        httponly=True,
        samesite="lax",
    )
    return response


async def callback(request: Request) -> Response:
    settings: Settings = request.app.state.settings
    auth = settings.status_auth
    if not auth.sign_in or auth.client_id is None or settings.app_id is None:
        return PlainTextResponse("Not Found", status_code=404)
    base = public_base_url(request)
    home = f"{base}/"
    query = request.query_params
    if not signing.check_state(
        _state_key(settings), request.cookies.get(STATE_COOKIE), query.get("state"), time.time(), STATE_TTL
    ):
        reason = "The sign-in state does not match the one this browser was given (or it is over ten minutes old)."
        return auth_pages.refused(400, reason, home)
    if query.get("error"):
        reason = f"GitHub did not sign you in: {query.get('error_description') or query['error']}"
        return auth_pages.refused(401, reason, home)
    code = query.get("code") or ""
    if not _CODE.fullmatch(code):
        return auth_pages.refused(400, "GitHub's redirect carries no valid code.", home)
    try:
        token = await github_user.user_token(
            github_web_url(settings.api_url), auth.client_id, _secret(settings), code, f"{base}/auth/callback"
        )
        login, repos = await github_user.visible_repos(settings.api_url, token, settings.app_id)
    except github_user.SignInError as exc:
        return auth_pages.refused(exc.status, exc.reason, home)
    key = session.session_key(_secret(settings))
    try:
        cookie = await run_in_threadpool(session.start, request.app.state.redis, key, login, repos, time.time())
    except redis.RedisError as exc:
        return auth_pages.refused(503, f"Redis unavailable ({type(exc).__name__}): the session cannot be kept.", home)
    log.info("sign-in: @%s signed in to the status page and can read %d repositories", login, len(repos))
    response = RedirectResponse(home, 303)
    response.set_cookie(
        session.SESSION_COOKIE,
        cookie,
        max_age=session.SESSION_TTL,
        path=cookie_path(base, "/"),
        secure=base.startswith("https:"),
        httponly=True,
        samesite="lax",
    )
    response.delete_cookie(STATE_COOKIE, path=cookie_path(base, "/auth"))
    return response


async def signout(request: Request) -> Response:
    """Ends the session in Redis and in the browser. A GET link: the worst a forged one does is sign someone out."""
    settings: Settings = request.app.state.settings
    base = public_base_url(request)
    if settings.status_auth.sign_in:
        key = session.session_key(_secret(settings))
        try:
            cookie = request.cookies.get(session.SESSION_COOKIE)
            await run_in_threadpool(session.end, request.app.state.redis, key, cookie, time.time())
        except redis.RedisError:
            log.warning("sign-out: Redis unavailable; the session ends when its cookie expires")
    response = auth_pages.signed_out(f"{base}/")
    response.delete_cookie(session.SESSION_COOKIE, path=cookie_path(base, "/"))
    return response


routes = [
    Route("/auth/callback", callback, methods=["GET"], name="signin_callback"),
    Route("/auth/signout", signout, methods=["GET"], name="signout"),
]
