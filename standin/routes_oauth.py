"""GitHub's web flow for a GitHub App's user access tokens: `/login/oauth/authorize` and `/login/oauth/access_token`.

These live on the web host (github.com), not the API; the stand-in serves both on one base URL. The person
"in the browser" is whoever `StandIn.sign_in_browser` named. Errors follow GitHub's documented shapes:
authorization errors go back to the registered callback as `error=...`, and token errors are HTTP 200 with
`{"error": ...}`.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from html import escape
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from standin.state import OAuthCode, utcnow
from standin.web import state_of

CODE_TTL = dt.timedelta(minutes=10)
_AUTHORIZE_ERRORS = (
    "/apps/building-integrations/setting-up-and-registering-oauth-apps/troubleshooting-authorization-request-errors/"
)
_TOKEN_ERRORS = "/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/"
_TOKEN_ERROR_TEXT = {
    "incorrect_client_credentials": "The client_id and/or client_secret passed are incorrect.",
    "redirect_uri_mismatch": "The redirect_uri MUST match the registered callback URL for this application.",
    "bad_verification_code": "The code passed is incorrect or expired.",
}


def _page(status: int, title: str, text: str) -> HTMLResponse:
    body = f"<!doctype html><title>{escape(title)} · GitHub</title><h1>{escape(title)}</h1><p>{escape(text)}</p>"
    return HTMLResponse(body, status)


def _back(redirect_uri: str, params: dict[str, str]) -> RedirectResponse:
    return RedirectResponse(f"{redirect_uri}?{urlencode(params)}", 302)


async def authorize(request: Request) -> Response:
    """The page a browser is sent to; answers for the signed-in person at once, as after "Authorize"."""
    state = state_of(request)
    app, query = state.app, request.query_params
    if query.get("client_id") != app.client_id:
        return _page(404, "Not Found", "There is no application with that client ID.")
    if not app.callback_urls:
        return _page(400, "Redirect URI mismatch", "The redirect_uri is not associated with this application.")
    redirect_uri = query.get("redirect_uri") or app.callback_urls[0]
    echo = {"state": query["state"]} if "state" in query else {}
    if redirect_uri not in app.callback_urls:
        error = "redirect_uri_mismatch"
        reason = "The redirect_uri MUST match the registered callback URL for this application."
        return _back(app.callback_urls[0], _error(error, reason, "redirect-uri-mismatch", echo))
    with state.lock:
        login, approves = state.browser_login, state.browser_approves
    if login is None:
        return _page(200, "Sign in to GitHub", f"Sign in to continue to {app.name}.")
    if not approves:
        reason = "The user has denied your application access."
        return _back(redirect_uri, _error("access_denied", reason, "access-denied", echo))
    code = secrets.token_hex(10)
    with state.lock:
        state.oauth_codes[code] = OAuthCode(login, app.client_id, redirect_uri, utcnow() + CODE_TTL)
    return _back(redirect_uri, {"code": code, **echo})


def _error(error: str, description: str, anchor: str, echo: dict[str, str]) -> dict[str, str]:
    return {"error": error, "error_description": description, "error_uri": f"{_AUTHORIZE_ERRORS}#{anchor}", **echo}


async def _params(request: Request) -> dict[str, str]:
    """GitHub reads the parameters from the query string, a form body or a JSON body."""
    params = dict(request.query_params)
    raw = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        params.update({k: str(v) for k, v in body.items()} if isinstance(body, dict) else {})
    else:
        params.update(parse_qsl(raw.decode(errors="replace")))
    return params


def _answer(request: Request, body: dict[str, str | int]) -> Response:
    """JSON when asked for it, else GitHub's default form encoding; errors too are HTTP 200."""
    if "application/json" in request.headers.get("accept", ""):
        return JSONResponse(body)
    return Response(urlencode(body), media_type="application/x-www-form-urlencoded; charset=utf-8")


def _token_error(request: Request, error: str) -> Response:
    anchor = error.replace("_", "-").replace("incorrect-client-credentials", "incorrect-client-credentials")
    return _answer(
        request,
        {"error": error, "error_description": _TOKEN_ERROR_TEXT[error], "error_uri": _TOKEN_ERRORS + "#" + anchor},
    )


async def access_token(request: Request) -> Response:
    """Code → `ghu_` token, once: a used, expired, unknown or another client's code is `bad_verification_code`."""
    state = state_of(request)
    params = await _params(request)
    app = state.app
    if params.get("client_id") != app.client_id or not secrets.compare_digest(
        params.get("client_secret", ""), app.client_secret
    ):
        return _token_error(request, "incorrect_client_credentials")
    with state.lock:
        code = state.oauth_codes.pop(params.get("code", ""), None)
    if code is None or code.expires_at <= utcnow() or code.client_id != app.client_id:
        return _token_error(request, "bad_verification_code")
    if params.get("redirect_uri") and params["redirect_uri"] != code.redirect_uri:
        return _token_error(request, "redirect_uri_mismatch")
    token = state.mint_user_token(code.login)
    refresh = "ghr_" + secrets.token_hex(38)
    return _answer(
        request,
        {
            "access_token": token,
            "expires_in": 28800,
            "refresh_token": refresh,
            "refresh_token_expires_in": 15897600,
            "token_type": "bearer",
            "scope": "",
        },
    )


routes = [
    Route("/login/oauth/authorize", authorize, methods=["GET"]),
    Route("/login/oauth/access_token", access_token, methods=["POST"]),
]
