"""POST /webhook: raw body → verified gidgethub Event → router → 202/200/4xx/503.

Verify, route, enqueue; nothing else happens in the request (no GitHub call, no subprocess).
Only X-Hub-Signature-256 is accepted: the SHA-1 header is dropped before gidgethub sees it.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson
import redis
from gidgethub import ValidationFailure
from gidgethub.sansio import Event, validate_event
from prometheus_client import Counter
from starlette.types import Receive, Scope, Send

from bot.events import router
from bot.events.context import Delivery
from bot.payloads import Malformed, NotJSON, decode

ACCEPTED_TYPES = ("application/json",)  # set the App's webhook content type to JSON
MAX_BODY = 25 * 1024 * 1024  # GitHub caps payloads at 25 MB
DELIVERIES = Counter("plangate_deliveries", "Webhook deliveries by event and outcome", ["event", "outcome"])
log = logging.getLogger("plangate.webhook")


class Rejected(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


async def _read_body(headers: dict[str, str], receive: Receive) -> bytes:
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise Rejected(413, "payload larger than 25 MB")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Rejected(400, "the client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise Rejected(413, "payload larger than 25 MB")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _verified_event(headers: dict[str, str], body: bytes, secret: str) -> Event:
    for required in ("x-github-event", "x-github-delivery"):
        if not headers.get(required):
            raise Rejected(400, f"missing {required} header")
    if not headers.get("x-hub-signature-256"):
        raise Rejected(401, "missing X-Hub-Signature-256")
    try:
        validate_event(body, signature=headers["x-hub-signature-256"], secret=secret)
    except ValidationFailure:
        raise Rejected(401, "signature does not match") from None
    if headers.get("content-type", "").split(";")[0].strip().lower() not in ACCEPTED_TYPES:
        raise Rejected(415, "expected a content-type of application/json")
    try:
        data = decode(headers["x-github-event"], body)
    except NotJSON:
        raise Rejected(400, "body is not valid JSON") from None
    except Malformed as exc:
        raise Rejected(400, str(exc)) from None
    return Event(data, event=headers["x-github-event"], delivery_id=headers["x-github-delivery"])


def _status_for(delivery: Delivery) -> int:
    return 202 if delivery.outcome == "enqueued" else 200


class Webhook:
    """`POST /webhook` as a plain ASGI app (an instance, so Starlette's Route calls it as one): the hot
    path builds no Request or Response object."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _handle(scope, receive, send)


webhook = Webhook()


async def _handle(scope: Scope, receive: Receive, send: Send) -> None:
    started = time.perf_counter()
    state = scope["app"].state
    secret: str = state.settings.webhook_secret
    headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"] if k != b"x-hub-signature"}
    event_name = headers.get("x-github-event", "")
    info: dict[str, Any] = {"delivery": headers.get("x-github-delivery", ""), "event": event_name}
    metric_event = "unverified"  # unverified names are attacker-chosen: keep them out of label values
    try:
        body = await _read_body(headers, receive)
        event = _verified_event(headers, body, secret)
        metric_event = event_name
        info["action"] = event.data.get("action")
        repo = event.data.get("repository")
        info["repo"] = repo.get("full_name") if isinstance(repo, dict) else None
        delivery = Delivery(commands=state.commands, plans=state.plans, enqueuer=state.enqueuer)
        try:
            await router.dispatch(event, delivery)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise Rejected(400, f"malformed {event_name} payload: {type(exc).__name__} {exc}") from None
        status, outcome, reason = _status_for(delivery), delivery.outcome, delivery.reason
        info["jobs"] = delivery.jobs
    except Rejected as exc:
        status, outcome, reason = exc.status, "rejected", exc.reason
    except redis.RedisError:
        status, outcome, reason = 503, "redis-unavailable", "queue unavailable, redeliver later"
    DELIVERIES.labels(metric_event, outcome).inc()
    level = logging.WARNING if status >= 400 else logging.INFO  # at PLANGATE_LOG_LEVEL=warning, refusals only
    if log.isEnabledFor(level):
        info.update(outcome=outcome, status=status, reason=reason, ms=round((time.perf_counter() - started) * 1000, 2))
        log.log(level, orjson.dumps(info, default=str).decode())
    answer = orjson.dumps({"outcome": outcome, "reason": reason})
    await send({"type": "http.response.start", "status": status, "headers": [*_JSON, _length(answer)]})
    await send({"type": "http.response.body", "body": answer})


_JSON = [(b"content-type", b"application/json")]


def _length(body: bytes) -> tuple[bytes, bytes]:
    return (b"content-length", str(len(body)).encode())
