"""The stand-in's Starlette app: GitHub's REST routes, git over HTTP, and a log of every request."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from standin import (
    git_http,
    routes_apps,
    routes_checks,
    routes_contents,
    routes_issues,
    routes_oauth,
    routes_repos,
    routes_user,
)
from standin.auth import DOCS, auth_kind
from standin.state import LoggedRequest, State


class RequestLog:
    """Records method, path, status and auth kind, so tests can count calls to "GitHub"."""

    def __init__(self, app: ASGIApp, state: State) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        kind = auth_kind(Request(scope))
        logged = False

        def log(status: int) -> None:
            with self.state.lock:
                self.state.requests.append(LoggedRequest(scope["method"], scope["path"], status, kind))

        async def record(message: Message) -> None:
            nonlocal logged
            if message["type"] == "http.response.start" and not logged:
                logged = True
                log(message["status"])  # before the client can see the answer
            await send(message)

        try:
            await self.app(scope, receive, record)
        except Exception:
            if not logged:
                log(500)
            raise


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return JSONResponse({"message": "Not Found", "documentation_url": DOCS, "status": "404"}, 404)


def create_app(state: State) -> ASGIApp:
    app = Starlette(
        routes=[
            *routes_apps.routes,
            *routes_repos.routes,
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
    return RequestLog(app, state)
