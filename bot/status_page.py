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
from urllib.parse import urlsplit

import redis
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from bot import status_reads
from bot.gate_states import GateState, gate_states
from bot.status_auth import EVERYTHING, Access, page_access
from bot.status_view import (
    DriftRow,
    FailedRow,
    GateRow,
    Moment,
    RateLimit,
    RunRow,
    StatusView,
    Verdict,
    Viewer,
    WorkerRow,
)
from bot.urls import public_base_url

_TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
RUNS_SHOWN = 50
REFRESH_SECONDS = 10
_KNOWN_STATES = {"success", "failure", "pending", "error"}
_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:1.5rem;line-height:1.4;color:#1f2328}"
    "table{border-collapse:collapse;margin-bottom:1.5rem}"
    "th,td{border:1px solid #d0d7de;padding:.25rem .5rem;text-align:left;vertical-align:top}"
    "th{background:#f6f8fa}code{font-size:.9em}.muted{color:#656d76}"
    ".state-success{color:#1a7f37;font-weight:600}.state-failure,.state-error{color:#cf222e;font-weight:600}"
    ".state-pending{color:#9a6700;font-weight:600}.state-unknown{color:#656d76}"
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
    """The whole document. Pure: the same inputs give the same page. `runs` newest first (as runlog stores them).

    For a signed-in person (`access.repos` set) `runs` must already hold only their repositories; workers
    are then only counted, since their job ids name repositories and projects."""
    sandboxes = sandboxes or {}
    view = StatusView(
        as_of=_utc(now),
        refresh_seconds=REFRESH_SECONDS,
        viewer=_viewer(access, signout_url),
        sandbox_off=sorted(name for name, how in sandboxes.items() if how.startswith("OFF")),
        sandbox_kinds=sorted(set(sandboxes.values())),
        rate_limited=[
            RateLimit(name, kind, max(1, round(left))) for name, (kind, left) in sorted((rate_limited or {}).items())
        ],
        failed=[_failed_row(f) for f in failed],
        gates=[_gate_row(g, now) for g in gate_states(runs)],
        drift=_drift_rows(runs, now),
        runs=[_run_row(r, now) for r in runs],
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


def _gate_row(g: GateState, now: float) -> GateRow:
    return GateRow(
        repo=g.repo,
        number=_number(g.number),
        sha=g.sha,
        context=g.context,
        gate=_verdict(g.state, g.description),
        projects=", ".join(g.projects),
        updated=_moment(g.at, now),
    )


def _failed_row(f: Mapping[str, Any]) -> FailedRow:
    project = f.get("project")
    return FailedRow(
        repo=_text(f.get("repo")),
        project=_text(project.get("name") if isinstance(project, Mapping) else None),
        sha=_text(f.get("sha")),
        issue=_number(f.get("number")),
        url=_link(f.get("url")),
    )


def _run_row(r: Mapping[str, Any], now: float) -> RunRow:
    return RunRow(
        at=_moment(r.get("at"), now),
        kind=_text(r.get("kind")),
        repo=_text(r.get("repo")),
        number=_number(r.get("number")),
        project=_text(r.get("project")),
        sha=_text(r.get("sha")),
        summary=_text(r.get("summary")),
        gate=_verdict(_text(r.get("gate")), _text(r.get("gate_description"))),
        approver=_text(r.get("approver")),
        result=_text(r.get("result")),
        url=_link(r.get("url")),
    )


def _drift_rows(runs: Sequence[Mapping[str, Any]], now: float) -> list[DriftRow]:
    """The last drift check of each (repo, project): runs are newest first, so the first one seen."""
    latest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for run in runs:
        if run.get("kind") == "drift":
            latest.setdefault((_text(run.get("repo")), _text(run.get("project"))), run)
    return [
        DriftRow(
            repo=repo,
            project=project,
            sha=_text(run.get("sha")),
            result=_verdict(_text(run.get("gate")), _text(run.get("result"))),
            issue=_number(run.get("number")),
            checked=_moment(run.get("at"), now),
        )
        for (repo, project), run in sorted(latest.items())
    ]


def _worker_row(w: Mapping[str, Any], now: float) -> WorkerRow:
    return WorkerRow(
        name=_text(w.get("name")),
        state=_text(w.get("state")),
        job=_text(w.get("job")),
        queues=", ".join(map(str, w.get("queues") or [])),
        heartbeat=_moment(w.get("heartbeat"), now),
    )


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _number(value: Any) -> str:
    return f"#{value}" if value not in (None, "") else ""


def _verdict(state: str, detail: str) -> Verdict | None:
    if not state:
        return None
    return Verdict(state, state if state in _KNOWN_STATES else "unknown", detail)


def _link(url: Any) -> str:
    """Only http(s) links: a stored `javascript:` URL must not become clickable."""
    return url if isinstance(url, str) and urlsplit(url).scheme in ("http", "https") else ""


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _moment(at: Any, now: float) -> Moment | None:
    if not isinstance(at, int | float) or isinstance(at, bool):
        return None
    seconds = max(0, int(now - at))
    ago = f"{seconds} s" if seconds < 120 else f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"
    return Moment(ago, _utc(at))


def _snapshot(conn: redis.Redis, access: Access, signout_url: str) -> str:
    seen = status_reads.read(conn, access.repos, RUNS_SHOWN)
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
