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
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import redis
from rq import Queue, Worker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from bot.gate_states import GateState, gate_states
from bot.status_auth import EVERYTHING, Access, page_access
from bot.urls import public_base_url
from core import redis_keys
from core.contract import QUEUE_NAMES
from plumbing.runlog import KEEP, recent_runs

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


@dataclass(frozen=True)
class Moment:
    """When something happened, as the page says it ("30 s"), with the exact UTC time for the tooltip."""

    ago: str
    utc: str


@dataclass(frozen=True)
class Verdict:
    """A gate or drift state, its CSS class (an unknown state gets a neutral one) and the detail shown under it."""

    state: str
    css: str
    detail: str


@dataclass(frozen=True)
class GateRow:
    repo: str
    number: str
    sha: str
    context: str
    gate: Verdict | None
    projects: str
    updated: Moment | None


@dataclass(frozen=True)
class DriftRow:
    repo: str
    project: str
    sha: str
    result: Verdict | None
    issue: str
    checked: Moment | None


@dataclass(frozen=True)
class RunRow:
    at: Moment | None
    kind: str
    repo: str
    number: str
    project: str
    sha: str
    summary: str
    gate: Verdict | None
    approver: str
    result: str
    url: str
    """Empty unless http(s): a stored `javascript:` URL must not become clickable."""


@dataclass(frozen=True)
class WorkerRow:
    name: str
    state: str
    job: str
    queues: str
    heartbeat: Moment | None


@dataclass(frozen=True)
class RateLimit:
    installation: str
    kind: str
    seconds: int


@dataclass(frozen=True)
class Viewer:
    """A signed-in person: who, where to sign out, and whether they can read no repository at all."""

    login: str
    signout_url: str
    sees_nothing: bool


@dataclass(frozen=True)
class StatusView:
    """What templates/status.html shows, as plain values: every decision is made here, the markup is the template's,
    and the template's autoescaping makes every value text (repo, project, summary come from users' repositories).
    Empty values show as "—"."""

    as_of: str
    refresh_seconds: int
    viewer: Viewer | None
    sandbox_off: list[str]
    """Workers that opted out of the sandbox: the first thing anyone sees."""
    sandbox_kinds: list[str]
    rate_limited: list[RateLimit]
    gates: list[GateRow]
    drift: list[DriftRow]
    runs: list[RunRow]
    queues: list[tuple[str, int]]
    workers: list[WorkerRow] | None
    """None for a signed-in person: job ids name repositories and projects, so workers are only counted."""
    workers_running: int
    workers_busy: int


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


def read_workers(conn: redis.Redis) -> list[dict[str, Any]]:
    """RQ's registered workers as plain values for the renderer."""
    workers = []
    for worker in Worker.all(connection=conn):
        heartbeat = worker.last_heartbeat
        workers.append(
            {
                "name": worker.name,
                "state": worker.get_state(),
                "job": worker.get_current_job_id(),
                "queues": worker.queue_names(),
                "heartbeat": heartbeat.timestamp() if heartbeat else None,
            }
        )
    return sorted(workers, key=lambda w: str(w["name"]))


def _snapshot(conn: redis.Redis, access: Access, signout_url: str) -> str:
    """What `access` may see: for a signed-in person, only their repositories' runs, from the whole run log."""
    if access.repos is None:
        runs = recent_runs(conn, RUNS_SHOWN)
    else:
        runs = [r for r in recent_runs(conn, KEEP) if str(r.get("repo", "")).lower() in access.repos][:RUNS_SHOWN]
    queues = {name: Queue(name, connection=conn).count for name in QUEUE_NAMES}
    return render_status_page(
        runs,
        queues,
        read_workers(conn),
        time.time(),
        access=access,
        signout_url=signout_url,
        sandboxes=read_sandboxes(conn),
        rate_limited=read_rate_limited(conn) if access.repos is None else {},
    )


def read_rate_limited(conn: redis.Redis) -> dict[str, tuple[str, float]]:
    """Installation → (primary | secondary, seconds left), from the keys workers set while limited."""
    found = {}
    for key in conn.scan_iter(match=f"{redis_keys.RATE_LIMITED_PREFIX}*", count=100):
        kind, left = conn.get(key), conn.ttl(key)
        name = (key.decode() if isinstance(key, bytes) else str(key)).removeprefix(redis_keys.RATE_LIMITED_PREFIX)
        if isinstance(kind, bytes) and isinstance(left, int) and left > 0:
            found[name] = (kind.decode(), float(left))
    return found


def read_sandboxes(conn: redis.Redis) -> dict[str, str]:
    """Worker name → how it runs terraform, as each worker recorded it at start-up."""
    found = {}
    for key in conn.scan_iter(match=f"{redis_keys.SANDBOX_PREFIX}*", count=100):
        value = conn.get(key)
        name = key.decode() if isinstance(key, bytes) else str(key)
        if isinstance(value, bytes):
            found[name.removeprefix(redis_keys.SANDBOX_PREFIX)] = value.decode()
    return found


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
