"""`GET /runs/{id}`: one run's page (what ran where, the plan as a diff, the gate, the output), read from
Redis only, and the two static files it uses.

Who may read it is the status page's rule (bot.status_auth.page_access). A run of a repository the reader
cannot see answers exactly like a run that does not exist, 404, so a run id never tells whether a
repository exists or what it is called. Without the App's private key the web process cannot verify what
the workers sealed (plumbing.run_store), so every run page answers 404 then.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import redis
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from bot.run_view import run_view
from bot.status_auth import Access, page_access
from bot.urls import github_web_url, public_base_url
from core.runs import RunHead, Stored, valid_id
from plumbing.run_store import RunStore
from plumbing.settings import Settings

_TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
_STATIC_DIR = Path(__file__).parent / "static"
_STATIC = {
    "run.css": ("text/css; charset=utf-8", (_STATIC_DIR / "run.css").read_bytes()),
    "live.js": ("text/javascript; charset=utf-8", (_STATIC_DIR / "live.js").read_bytes()),
}
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'none'; "
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def not_found() -> Response:
    """The one answer for a bad id, a missing or expired run, and a run the reader may not see."""
    return PlainTextResponse("Not Found\n", 404, headers=HEADERS)


def unavailable(exc: redis.RedisError) -> Response:
    return PlainTextResponse(f"Redis unavailable ({type(exc).__name__}).\n", 503, headers=HEADERS)


def visible(access: Access, head: RunHead) -> bool:
    return access.repos is None or head.repo.lower() in access.repos


def path_prefix(request: Request) -> str:
    """plangate's path on its host ("" at the root): links and the stream stay on the page's own origin."""
    return urlsplit(public_base_url(request)).path.rstrip("/")


@dataclass(frozen=True)
class Found:
    stored: Stored
    siblings: list[RunHead]


def _read(store: RunStore, run_id: str) -> Found | None:
    stored = store.read(run_id)
    if stored is None:
        return None
    head = stored.head
    siblings = [s for s in store.siblings(head.repo_id, head.sha) if s.repo == head.repo]
    return Found(stored, siblings)


def _render(found: Found, prefix: str, github_url: str) -> str:
    view = run_view(found.stored, found.siblings, time.time(), prefix, github_url)
    return _TEMPLATES.get_template("run.html").render(page=view, static_url=f"{prefix}/static", home_url=f"{prefix}/")


async def run_page(request: Request) -> Response:
    run_id: str = request.path_params["run_id"]
    settings: Settings = request.app.state.settings
    store: RunStore | None = request.app.state.run_store
    try:
        access = await page_access(request)
        if isinstance(access, Response):
            return access
        if store is None or not valid_id(run_id):
            return not_found()
        found = await run_in_threadpool(_read, store, run_id)
    except redis.RedisError as exc:
        return unavailable(exc)
    if found is None or not visible(access, found.stored.head):
        return not_found()
    # Drawing a large plan takes a while: in the thread pool, so webhooks are not held up meanwhile.
    page = await run_in_threadpool(_render, found, path_prefix(request), github_web_url(settings.api_url))
    return HTMLResponse(page, headers=HEADERS)


async def static(request: Request) -> Response:
    found = _STATIC.get(request.path_params["name"])
    if found is None:
        return PlainTextResponse("Not Found\n", 404)
    media_type, body = found
    return Response(body, media_type=media_type, headers={"X-Content-Type-Options": "nosniff"})


routes = [
    Route("/runs/{run_id}", run_page, name="run_page"),
    Route("/static/{name}", static, name="static"),
]
