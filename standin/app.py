"""The stand-in's Starlette app: GitHub's REST routes, git over HTTP, and a log of every request.

Layers, outermost first: the request log, the rate limits (a refused request goes no further), injected faults,
then the routes.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from standin import (
    git_http,
    routes_activity,
    routes_apps,
    routes_checks,
    routes_contents,
    routes_issues,
    routes_oauth,
    routes_repos,
    routes_reviews,
    routes_user,
)
from standin.answers import note_of
from standin.auth import DOCS, auth_kind
from standin.dropping import DROP
from standin.faults import FaultInjection, Faults
from standin.limits import Limits, RateLimiting
from standin.state import LoggedRequest, State


class RequestLog:
    """Records method, path, status and auth kind, so tests can count calls to "GitHub".

    A dropped connection is logged with status 0; `fault` and `rate_limit` say what answered instead of the route.
    """

    def __init__(self, app: ASGIApp, state: State) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = auth_kind(Request(scope))
        note = note_of(scope)
        logged = False

        def log(status: int) -> None:
            entry = LoggedRequest(scope["method"], scope["path"], status, kind, note.fault, note.rate_limit)
            with self.state.lock:
                self.state.requests.append(entry)

        async def record(message: Message) -> None:
            nonlocal logged
            if message["type"] in ("http.response.start", DROP) and not logged:
                logged = True
                log(message.get("status", 0))  # before the client can see the answer (or its absence)
            await send(message)

        try:
            await self.app(scope, receive, record)
        except Exception:
            if not logged:
                log(500)
            raise


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"message": "Not Found", "documentation_url": DOCS, "status": "404"}, 404)


def create_app(state: State, faults: Faults, limits: Limits) -> ASGIApp:
    """The whole stand-in, with the fault queue and rate limits the facade exposes (`gh.faults`, `gh.limits`)."""
    app = Starlette(
        routes=[
            *routes_activity.routes,
            *routes_apps.routes,
            *routes_repos.routes,
            *routes_reviews.routes,
            *routes_checks.routes,
            *routes_contents.routes,
            *routes_issues.routes,
            *routes_oauth.routes,
            *routes_user.routes,
            *git_http.routes,
        ],
        exception_handlers={404: _not_found},
    )
    app.state.standin = state
    injected = FaultInjection(app, state, faults, limits)
    return RequestLog(RateLimiting(injected, state, limits), state)
