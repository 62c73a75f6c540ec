"""`GET /`: what plangate did lately, read from Redis only (never GitHub), as plain server-rendered HTML.

Who may read it, and which repositories they see, is bot.status_auth's decision.

The page works without JavaScript (there is none: the CSP forbids scripts), refreshes itself every
10 seconds, and is rendered from templates/status.html with autoescaping: repo, project and summary come
from users' repositories, so every value they show is text, never markup.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import redis
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from bot import status_reads
from bot.status_auth import EVERYTHING, Access, page_access
from bot.status_rows import link, moment, number, repositories, run_row, text, utc
from bot.status_view import FailedRow, RateLimit, StatusView, Viewer, WorkerRow
from bot.urls import public_base_url

_TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
RUNS_SHOWN = 50
REFRESH_SECONDS = 10
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1.5rem;line-height:1.4;color:#1f2328}"
    "table{border-collapse:collapse;margin-bottom:1.5rem}"
    "th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}"
    "th{background:#f6f8fa}code{font-size:.9em}.muted{color:#656d76}"
    ".state-success{color:#1a7f37;font-weight:600}.state-failure,.state-error{color:#cf222e;font-weight:600}"
    ".state-pending{color:#9a6700;font-weight:600}.state-unknown,.state-event{color:#656d76}"
    "h2.repo{border-bottom:1px solid #d0d7de;padding-bottom:.25rem}h3{font-size:1rem;margin:.75rem 0 .25rem}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def render_status_page(
    runs: Sequence[Mapping[str, Any]],
    queues: Mapping[str, int],
    workers: Sequence[Mapping[str, Any]],
    now: float,
    *,
    access: Access = EVERYTHING,
    signout_url: str = "/auth/signout",
    sandboxes: Mapping[str, str] | None = None,
    rate_limited: Mapping[str, tuple[str, float]] | None = None,
    failed: Sequence[Mapping[str, Any]] = (),
) -> str:
    """The whole document. Pure: the same inputs give the same page. `runs` newest first (as runlog stores
    them), the whole log: the page groups all of it per repository and lists the newest RUNS_SHOWN in full.

    For a signed-in person (`access.repos` set) `runs` must already hold only their repositories; workers
    are then only counted, since their job ids name repositories and projects."""
    sandboxes = sandboxes or {}
    view = StatusView(
        as_of=utc(now),
        refresh_seconds=REFRESH_SECONDS,
        viewer=_viewer(access, signout_url),
        sandbox_off=sorted(name for name, how in sandboxes.items() if how.startswith("OFF")),
        sandbox_kinds=sorted(set(sandboxes.values())),
        rate_limited=[
            RateLimit(name, kind, max(1, round(left))) for name, (kind, left) in sorted((rate_limited or {}).items())
        ],
        failed=[_failed_row(f) for f in failed],
        repos=repositories(runs, now),
        runs=[run_row(r, now) for r in runs[:RUNS_SHOWN]],
        queues=list(queues.items()),
        workers=[_worker_row(w, now) for w in workers] if access.repos is None else None,
        workers_running=len(workers),
        workers_busy=sum(1 for w in workers if w.get("state") == "busy"),
    )
    return _TEMPLATES.get_template("status.html").render(page=view, style=_STYLE)


def _viewer(access: Access, signout_url: str) -> Viewer | None:
    if access.repos is None or access.login is None:
        return None
    return Viewer(access.login, signout_url, sees_nothing=not access.repos)


def _failed_row(f: Mapping[str, Any]) -> FailedRow:
    project = f.get("project")
    return FailedRow(
        repo=text(f.get("repo")),
        project=text(project.get("name") if isinstance(project, Mapping) else None),
        sha=text(f.get("sha")),
        issue=number(f.get("number")),
        url=link(f.get("url")),
    )


def _worker_row(w: Mapping[str, Any], now: float) -> WorkerRow:
    return WorkerRow(
        name=text(w.get("name")),
        state=text(w.get("state")),
        job=text(w.get("job")),
        queues=", ".join(map(str, w.get("queues") or [])),
        heartbeat=moment(w.get("heartbeat"), now),
    )


def _snapshot(conn: redis.Redis, access: Access, signout_url: str) -> str:
    seen = status_reads.read(conn, access.repos)
    return render_status_page(
        seen.runs,
        seen.queues,
        seen.workers,
        time.time(),
        access=access,
        signout_url=signout_url,
        sandboxes=seen.sandboxes,
        rate_limited=seen.rate_limited,
        failed=seen.failed,
    )


async def status_page(request: Request) -> Response:
    """Blocking Redis reads run in the thread pool so the webhook path is never held up by this page."""
    try:
        access = await page_access(request)
        if isinstance(access, Response):
            return access
        signout_url = f"{public_base_url(request)}/auth/signout"
        page = await run_in_threadpool(_snapshot, request.app.state.redis, access, signout_url)
    except redis.RedisError as exc:
        reason = {"reason": type(exc).__name__}
        return _TEMPLATES.TemplateResponse(request, "status_unavailable.html", reason, status_code=503, headers=HEADERS)
    return HTMLResponse(page, headers=HEADERS)


routes = [Route("/", status_page, name="status_page")]
