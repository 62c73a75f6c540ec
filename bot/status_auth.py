"""Who may read `GET /` and `GET /metrics`, decided per request from Settings.status_auth.

Closed by default. PLANGATE_STATUS_TOKEN opens both to `Authorization: Bearer TOKEN` or HTTP Basic with
the token as password (any user name), compared in constant time. A signed-in person (GitHub sign-in)
sees the page filtered to the repositories they can read; /metrics never takes the session cookie,
since scrapers are not people. PLANGATE_STATUS_PUBLIC=true opens both to anyone.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from dataclasses import dataclass

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bot import session, signin
from bot.urls import public_base_url
from core.status_settings import StatusAuth
from plumbing.settings import Settings

_OPENERS = (
    "set PLANGATE_STATUS_TOKEN (sent as a Bearer token or a Basic password), GITHUB_CLIENT_ID and "
    "GITHUB_CLIENT_SECRET (Sign in with GitHub), or PLANGATE_STATUS_PUBLIC=true"
)


@dataclass(frozen=True)
class Access:
    """Who is reading: `repos` None means every repository (the token, or public mode)."""

    login: str | None = None
    repos: frozenset[str] | None = None


EVERYTHING = Access()


def _presented(request: Request) -> str | None:
    """The secret a request presents: a Bearer token or a Basic password; "" for unusable credentials."""
    header = request.headers.get("authorization")
    if header is None:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            return base64.b64decode(value.strip(), validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError):
            return ""
    return ""


def _token_ok(presented: str, token: str | None) -> bool:
    return token is not None and hmac.compare_digest(presented.encode(), token.encode())


def refuse(auth: StatusAuth, reason: str) -> Response:
    """401 with a challenge: Basic when a token could be typed (browsers then ask for it), else Bearer."""
    challenge = 'Basic realm="plangate", charset="UTF-8"' if auth.token else 'Bearer realm="plangate"'
    return PlainTextResponse(reason + "\n", 401, headers={"WWW-Authenticate": challenge, "Cache-Control": "no-store"})


def metrics_access(request: Request) -> Response | None:
    """None when /metrics may be served, else the refusal."""
    auth: StatusAuth = request.app.state.settings.status_auth
    presented = _presented(request)
    if auth.public or (presented is not None and _token_ok(presented, auth.token)):
        return None
    if auth.token is None:
        return refuse(auth, f"/metrics is closed: it accepts only PLANGATE_STATUS_TOKEN, which is not set; {_OPENERS}.")
    if presented is not None:
        return refuse(auth, "/metrics: the credentials sent are not PLANGATE_STATUS_TOKEN.")
    return refuse(auth, "/metrics needs PLANGATE_STATUS_TOKEN, sent as a Bearer token or a Basic password.")


async def page_access(request: Request) -> Access | Response:
    """Everything (token, public), one person's repositories (session), or the answer to send instead.

    Redis errors propagate: the page answers 503 for them as it does for its own reads."""
    settings: Settings = request.app.state.settings
    auth = settings.status_auth
    if auth.public:
        return EVERYTHING
    presented = _presented(request)
    if presented is not None and auth.token is not None:
        if _token_ok(presented, auth.token):
            return EVERYTHING
        return refuse(auth, "The status page: the credentials sent are not PLANGATE_STATUS_TOKEN.")
    if auth.sign_in and auth.client_secret is not None:
        key = session.session_key(auth.client_secret)
        cookie = request.cookies.get(session.SESSION_COOKIE)
        viewer = await run_in_threadpool(session.find, request.app.state.redis, key, cookie, time.time())
        if viewer is not None:
            return Access(viewer.login, viewer.repos)
        if "text/html" in request.headers.get("accept", ""):
            return signin.begin(request)
        return refuse(
            auth,
            f"The status page: sign in with GitHub in a browser at {public_base_url(request)}/"
            + (", or send PLANGATE_STATUS_TOKEN." if auth.token else "."),
        )
    if auth.token:
        return refuse(auth, "The status page needs PLANGATE_STATUS_TOKEN, sent as a Bearer token or a Basic password.")
    return refuse(auth, f"The status page is closed: {_OPENERS}.")
