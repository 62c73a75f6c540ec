"""`GET /runs/{id}/events`: a running run's new output lines as Server-Sent Events.

Each line is an event `line` whose `id:` is its stream id and whose data is `{"id", "html"}`, the html
rendered by core.ansi_html exactly as the page renders it. A reader resumes after the `Last-Event-ID`
header (EventSource sends it when it reconnects), else after `?after=` (the last line the page drew).
When the run has ended and every line is sent, an `end` event, and the stream closes; it closes anyway
after PLANGATE_RUN_STREAM_SECONDS (the browser reconnects), with a keep-alive comment every
KEEPALIVE_SECONDS of silence so proxies keep it open.

The reads are redis.asyncio's XREAD BLOCK: a viewer holds a Redis connection while waiting, never a thread.
So a web process holds at most MAX_STREAMS streams open; past that a stream answers 503 (the page shows
the output as it was when it loaded, a reload shows more): readers opening streams by the thousand
would otherwise take every connection Redis allows, the workers' and the gate's too.
Access is the page's (bot.run_page): 404 for a run the reader may not see.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import redis
import redis.asyncio as aredis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from bot.run_page import HEADERS, not_found, unavailable, visible
from bot.status_auth import page_access
from core import redis_keys
from core.ansi_html import to_html
from core.runs import RunHead, head_from, valid_id
from plumbing.run_store import RunStore

KEEPALIVE_SECONDS = 15.0
POLL_MS = 2000  # one XREAD waits this long, then the stream looks whether the run has ended
SOCKET_TIMEOUT = POLL_MS / 1000 + 10  # the async client's: longer than any XREAD BLOCK it sends
BATCH = 500  # lines per XREAD
RETRY_MS = 2000  # how soon EventSource reconnects after the stream closes
_STREAM_ID = re.compile(r"[0-9]{1,20}-[0-9]{1,20}")
MAX_STREAMS = 200  # live streams one web process holds open at once


def resume_point(request: Request) -> str:
    """Where the reader is: Last-Event-ID, else ?after=, else the start; anything else than a stream id
    counts as the start (the page skips lines it already has)."""
    for given in (request.headers.get("last-event-id"), request.query_params.get("after")):
        if given and _STREAM_ID.fullmatch(given):
            return given
    return "0-0"


async def current_head(conn: aredis.Redis, store: RunStore, run_id: str) -> RunHead | None:
    """The run's head as the worker sealed it (plumbing.run_store.RunStore.head, read without a thread)."""
    key = redis_keys.run(run_id)
    text = store.records.unseal(f"{key}#head", await conn.hget(key, "head"))
    return None if text is None else head_from(json.loads(text))


def line_event(entry_id: str, html: str) -> str:
    return f"id: {entry_id}\nevent: line\ndata: {json.dumps({'id': entry_id, 'html': html})}\n\n"


END_EVENT = "event: end\ndata: {}\n\n"
KEEPALIVE = ": keep-alive\n\n"


async def events(
    conn: aredis.Redis,
    store: RunStore,
    run_id: str,
    after: str,
    limit_seconds: float,
    closing: threading.Event,
) -> AsyncIterator[str]:
    """The stream's text: lines after `after` as they come, then `end` once the run has ended and all its
    lines are sent. The head is read before each XREAD: lines a run wrote before it ended are then all
    found by the reads that follow."""
    out = redis_keys.run_output(run_id)
    started = quiet_since = time.monotonic()
    yield f"retry: {RETRY_MS}\n\n"
    while time.monotonic() - started < limit_seconds and not closing.is_set():
        try:
            head = await current_head(conn, store, run_id)
            ended = head is None or not head.running
            answer: Any = await conn.xread({out: after}, count=BATCH, block=None if ended else POLL_MS)
        except redis.RedisError:
            return  # the browser reconnects, and the page answers 503 while Redis is away
        entries = answer[0][1] if answer else []
        for entry_id, fields in entries:
            line = store.line(run_id, entry_id, fields)
            after = line.id if line else entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
            if line is not None:
                yield line_event(line.id, to_html(line.text))
                quiet_since = time.monotonic()
        if ended and not entries:
            yield END_EVENT
            return
        if time.monotonic() - quiet_since >= KEEPALIVE_SECONDS:
            yield KEEPALIVE
            quiet_since = time.monotonic()


async def run_events(request: Request) -> Response:
    run_id: str = request.path_params["run_id"]
    store: RunStore | None = request.app.state.run_store
    conn: aredis.Redis = request.app.state.run_redis
    try:
        access = await page_access(request)
        if isinstance(access, Response):
            return access
        if store is None or not valid_id(run_id):
            return not_found()
        head = await current_head(conn, store, run_id)
    except redis.RedisError as exc:
        return unavailable(exc)
    if head is None or not visible(access, head):
        return not_found()
    slots: StreamSlots = request.app.state.stream_slots
    if slots.full:
        busy = f"Too many live streams open ({MAX_STREAMS}): the page shows the run without one.\n"
        return PlainTextResponse(busy, 503, headers={**HEADERS, "Retry-After": "30"})
    limit = request.app.state.settings.run_stream_seconds
    stream = events(conn, store, run_id, resume_point(request), limit, request.app.state.streams_closing)
    headers = {**HEADERS, "X-Accel-Buffering": "no"}  # nginx: pass each event on as it comes
    return StreamingResponse(slots.held(stream), media_type="text/event-stream", headers=headers)


class StreamSlots:
    """How many live streams are open in this process (one event loop: no lock needed)."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.limit = limit
        self.taken = 0

    @property
    def full(self) -> bool:
        return self.taken >= self.limit

    async def held(self, stream: AsyncIterator[str]) -> AsyncIterator[str]:
        """`stream`, holding a slot while it is read: taken and given back inside the generator, so a
        response cancelled before it began holds none (a few streams starting at once may pass the cap)."""
        self.taken += 1
        try:
            async for chunk in stream:
                yield chunk
        finally:
            self.taken -= 1


def stop_streams(app: Starlette) -> None:
    """The server is stopping: every live stream ends at its next poll (the browser reconnects elsewhere)."""
    closing = getattr(app.state, "streams_closing", None)
    if closing is not None:
        closing.set()


routes = [Route("/runs/{run_id}/events", run_events, name="run_events")]
