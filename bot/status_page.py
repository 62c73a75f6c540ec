"""`GET /`: what plangate did lately, read from Redis only (never GitHub), as plain server-rendered HTML.

Who may read it, and which repositories they see, is bot.status_auth's decision.

The page works without JavaScript (there is none: the CSP forbids scripts), refreshes itself every
10 seconds, and escapes every value it shows: repo, project and summary come from users' repositories.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import urlsplit

import redis
from rq import Queue, Worker
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from bot.gate_states import GateState, gate_states
from bot.status_auth import EVERYTHING, Access, page_access
from bot.urls import public_base_url
from core import keys
from core.contract import QUEUE_NAMES
from core.runlog import KEEP, recent_runs

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
) -> str:
    """The whole document. Pure: the same inputs give the same page. `runs` newest first (as runlog stores them).

    For a signed-in person (`access.repos` set) `runs` must already hold only their repositories; workers
    are then only counted, since their job ids name repositories and projects."""
    workers_html = _workers_section(workers, now) if access.repos is None else _workers_count(workers)
    body = (
        f'<h1>plangate</h1><p class="muted">As of {_e(_utc(now))}; refreshes every {REFRESH_SECONDS} s.</p>'
        f"{_viewer_section(access, signout_url)}{_sandbox_section(sandboxes or {})}"
        f"{_rate_limit_section(rate_limited or {})}"
        f"{_gates_section(gate_states(runs), now)}{_drift_section(runs, now)}{_runs_section(runs, now)}"
        f"{_queues_section(queues)}{workers_html}"
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>plangate status</title><style>{_STYLE}</style></head><body>{body}</body></html>"
    )


def _sandbox_section(sandboxes: Mapping[str, str]) -> str:
    """How workers run terraform; an opted-out sandbox is the first thing anyone sees."""
    off = sorted(name for name, how in sandboxes.items() if how.startswith("OFF"))
    if off:
        return (
            '<p class="state-failure">SANDBOX OFF on '
            f"{_e(', '.join(off))}: terraform runs pull requests' code with the worker's view of the host "
            "(PLANGATE_SANDBOX=off).</p>"
        )
    kinds = sorted(set(sandboxes.values()))
    return f'<p class="muted">Terraform sandbox: {_e("; ".join(kinds))}.</p>' if kinds else ""


def _rate_limit_section(limited: Mapping[str, tuple[str, float]]) -> str:
    """While GitHub rate-limits an installation, plans and replies wait: say so, and for how long."""
    lines = [
        f"installation {_e(name)} ({_e(kind)} limit, about {max(1, round(left))} s more)"
        for name, (kind, left) in sorted(limited.items())
    ]
    if not lines:
        return ""
    return f'<p class="state-pending">GitHub is rate-limiting {"; ".join(lines)}: jobs wait, nothing is lost.</p>'


def _viewer_section(access: Access, signout_url: str) -> str:
    if access.repos is None or access.login is None:
        return ""
    line = (
        f"<p>Signed in as <strong>@{_e(access.login)}</strong>: showing the repositories you can read on GitHub. "
        f'<a href="{_e(signout_url)}">Sign out</a></p>'
    )
    if not access.repos:
        line += (
            "<p><strong>You cannot read any repository this App is installed on</strong>, so there is nothing "
            "to show here. Ask for read access to a repository, then sign out and in again.</p>"
        )
    return line


def _gates_section(gates: list[GateState], now: float) -> str:
    if not gates:
        return "<h2>Gate states</h2><p>No gate decisions yet.</p>"
    rows = [
        _row(
            _e(g.repo),
            _number(g.number),
            _sha(g.sha),
            _e(g.context),
            _state(g.state, g.description),
            _e(", ".join(g.projects)),
            _when(g.at, now),
        )
        for g in gates
    ]
    return "<h2>Gate states</h2>" + _table(
        ("Repository", "PR / issue", "Commit", "Context", "Gate", "Projects", "Updated"), rows
    )


def _runs_section(runs: Sequence[Mapping[str, Any]], now: float) -> str:
    if not runs:
        return "<h2>Recent runs</h2><p>No runs yet.</p>"
    headers = ("Time", "Kind", "Repository", "PR / issue", "Project", "Commit", "Plan", "Gate", "Approver")
    return "<h2>Recent runs</h2>" + _table((*headers, "Apply result", "Comment"), [_run_row(r, now) for r in runs])


def _run_row(r: Mapping[str, Any], now: float) -> str:
    return _row(
        _when(r.get("at"), now),
        *(_e(_text(r.get(key))) for key in ("kind", "repo")),
        _number(r.get("number")),
        _e(_text(r.get("project"))),
        _sha(_text(r.get("sha"))),
        _e(_text(r.get("summary"))),
        _state(_text(r.get("gate")), _text(r.get("gate_description"))),
        *(_e(_text(r.get(key))) for key in ("approver", "result")),
        _link(r.get("url")),
    )


def _queues_section(queues: Mapping[str, int]) -> str:
    rows = [_row(_e(name), _e(str(count))) for name, count in queues.items()]
    return "<h2>Queues</h2>" + _table(("Queue", "Waiting jobs"), rows)


def _drift_section(runs: Sequence[Mapping[str, Any]], now: float) -> str:
    """The last drift check of each (repo, project): runs are newest first, so the first one seen."""
    latest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for run in runs:
        if run.get("kind") == "drift":
            latest.setdefault((_text(run.get("repo")), _text(run.get("project"))), run)
    if not latest:
        return ""
    rows = [
        _row(
            _e(repo),
            _e(project),
            _sha(_text(run.get("sha"))),
            _state(_text(run.get("gate")), _text(run.get("result"))),
            _number(run.get("number")),
            _when(run.get("at"), now),
        )
        for (repo, project), run in sorted(latest.items())
    ]
    return "<h2>Drift checks</h2>" + _table(("Repository", "Project", "Commit", "Result", "Issue", "Checked"), rows)


def _workers_section(workers: Sequence[Mapping[str, Any]], now: float) -> str:
    if not workers:
        return "<h2>Workers</h2><p><strong>No workers running</strong>: queued jobs wait until one starts.</p>"
    rows = [
        _row(
            _e(_text(w.get("name"))),
            _e(_text(w.get("state"))),
            _e(_text(w.get("job")) or "—"),
            _e(", ".join(map(str, w.get("queues") or []))),
            _when(w.get("heartbeat"), now),
        )
        for w in workers
    ]
    return "<h2>Workers</h2>" + _table(("Name", "State", "Current job", "Queues", "Last heartbeat"), rows)


def _workers_count(workers: Sequence[Mapping[str, Any]]) -> str:
    if not workers:
        return "<h2>Workers</h2><p><strong>No workers running</strong>: queued jobs wait until one starts.</p>"
    busy = sum(1 for w in workers if w.get("state") == "busy")
    return f"<h2>Workers</h2><p>{len(workers)} running, {busy} busy.</p>"


def _table(headers: Sequence[str], rows: Sequence[str]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _row(*cells: str) -> str:
    """One table row from already-escaped cells."""
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _e(value: str) -> str:
    return escape(value, quote=True)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _number(value: Any) -> str:
    return f"#{_e(str(value))}" if value not in (None, "") else "—"


def _sha(sha: str) -> str:
    return f'<code title="{_e(sha)}">{_e(sha[:7])}</code>' if sha else "—"


def _state(state: str, description: str) -> str:
    if not state:
        return "—"
    css = state if state in _KNOWN_STATES else "unknown"
    detail = f"<br>{_e(description)}" if description else ""
    return f'<span class="state-{css}">{_e(state)}</span>{detail}'


def _link(url: Any) -> str:
    """Only http(s) links: a stored `javascript:` URL must not become clickable."""
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https"):
        return "—"
    return f'<a href="{_e(url)}" rel="noreferrer">comment</a>'


def _utc(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def _when(at: Any, now: float) -> str:
    if not isinstance(at, int | float) or isinstance(at, bool):
        return "—"
    seconds = max(0, int(now - at))
    ago = f"{seconds} s" if seconds < 120 else f"{seconds // 60} min" if seconds < 7200 else f"{seconds // 3600} h"
    return f'<span title="{_e(_utc(at))}">{_e(ago)} ago</span>'


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
    for key in conn.scan_iter(match=f"{keys.RATE_LIMITED_PREFIX}*", count=100):
        kind, left = conn.get(key), conn.ttl(key)
        name = (key.decode() if isinstance(key, bytes) else str(key)).removeprefix(keys.RATE_LIMITED_PREFIX)
        if isinstance(kind, bytes) and isinstance(left, int) and left > 0:
            found[name] = (kind.decode(), float(left))
    return found


def read_sandboxes(conn: redis.Redis) -> dict[str, str]:
    """Worker name → how it runs terraform, as each worker recorded it at start-up."""
    found = {}
    for key in conn.scan_iter(match=f"{keys.SANDBOX_PREFIX}*", count=100):
        value = conn.get(key)
        name = key.decode() if isinstance(key, bytes) else str(key)
        if isinstance(value, bytes):
            found[name.removeprefix(keys.SANDBOX_PREFIX)] = value.decode()
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
        reason = _e(type(exc).__name__)
        unavailable = f"<!doctype html><title>plangate status</title><p>Redis unavailable ({reason}).</p>"
        return HTMLResponse(unavailable, status_code=503, headers=HEADERS)
    return HTMLResponse(page, headers=HEADERS)


routes = [Route("/", status_page, name="status_page")]
