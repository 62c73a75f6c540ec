"""The Starlette app: lifespan holds settings, the Redis connection and the queues."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import redis
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from rq import Queue
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from bot import oidc, run_page, run_stream, setup, setup_code, signin, status_page
from bot.enqueue import Enqueuer
from bot.metrics import GateDecisions, GitHubHealth
from bot.status_auth import metrics_access
from bot.webhook import webhook
from core.contract import COMMANDS_QUEUE, PLANS_QUEUE
from plumbing import settings as settings_module
from plumbing.oidc_keys import KeyRing
from plumbing.records import Records
from plumbing.redis_client import connect, connect_async, held_async
from plumbing.run_store import RunStore
from plumbing.settings import Settings

log = logging.getLogger("plangate")


class PlangateApp(Starlette):
    """Starlette, except that `POST /webhook` goes straight to its handler: the busiest request skips
    the router and the middleware stack (the handler answers every failure itself). Anything else,
    a mounted path included, takes the usual way (the router has the route too)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/webhook" and scope["method"] == "POST":
            scope["app"] = self
            await webhook(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(settings: Settings | None = None) -> Starlette:
    """Build the app; settings default to the environment, read once at start-up."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        loaded = settings or settings_module.load(need_webhook=True)
        conn = connect(loaded.redis_url, socket_connect_timeout=2, socket_timeout=2)
        app.state.settings = loaded
        app.state.redis = conn
        app.state.commands = Queue(COMMANDS_QUEUE, connection=conn)
        app.state.plans = Queue(PLANS_QUEUE, connection=conn)
        app.state.enqueuer = Enqueuer(conn, held_async(loaded.redis_url, socket_connect_timeout=2, socket_timeout=2))
        app.state.worker_metrics = CollectorRegistry(auto_describe=True)
        app.state.worker_metrics.register(GateDecisions(conn))
        app.state.worker_metrics.register(GitHubHealth(conn))
        app.state.run_store = RunStore(Records(conn, loaded.private_key)) if loaded.private_key else None
        app.state.run_redis = connect_async(
            loaded.redis_url, socket_connect_timeout=2, socket_timeout=run_stream.SOCKET_TIMEOUT
        )
        _log_status_access(loaded)
        if loaded.oidc is not None:
            KeyRing(loaded.oidc.key_dir).ensure(time.time())  # the first key, if no worker made it yet
        yield
        await app.state.enqueuer.close()
        await app.state.run_redis.aclose()
        conn.close()

    app = PlangateApp(
        routes=[
            Route("/webhook", webhook, methods=["POST"]),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
            *setup.routes,
            *signin.routes,
            *status_page.routes,
            *oidc.routes,
            *run_page.routes,
            *run_stream.routes,
        ],
        lifespan=lifespan,
    )
    app.state.streams_closing = threading.Event()  # set by `plangate web` on a stop signal (bot.run_stream)
    app.state.stream_slots = run_stream.StreamSlots()
    return app


def _log_status_access(settings: Settings) -> None:
    """One line at start-up saying who can read / and /metrics; a loud one when anyone can."""
    auth = settings.status_auth
    if auth.public:
        log.warning(
            "PLANGATE_STATUS_PUBLIC=true: the status page, /metrics and every run page are open to ANYONE who "
            "can reach this server, showing repository names, PRs, approvers and SHAs, and on run pages each "
            "plan's resources and attribute values and terraform's output (masked, as in PR comments)"
        )
        return
    opened = [name for name, on in (("PLANGATE_STATUS_TOKEN", auth.token), ("GitHub sign-in", auth.sign_in)) if on]
    log.info("status page and /metrics: %s", " or ".join(opened) if opened else "closed to everyone (no setting)")


def create_setup_app(settings: Settings) -> Starlette:
    """Setup-only mode: no App yet, so no webhook and no Redis, just the manifest flow behind a code
    made and logged as the server starts (a restart makes a new one)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        app.state.setup_code = setup_code.new()
        setup_code.announce(app.state.setup_code)
        yield

    async def root(request: Request) -> Response:
        return RedirectResponse(request.url_for("setup_page"))

    app = Starlette(routes=[*setup.routes, Route("/healthz", healthz), Route("/", root)], lifespan=lifespan)
    app.state.settings = settings
    return app


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def readyz(request: Request) -> Response:
    try:
        request.app.state.redis.ping()
    except redis.RedisError as exc:
        return JSONResponse({"ready": False, "redis": type(exc).__name__}, status_code=503)
    return JSONResponse({"ready": True})


async def metrics(request: Request) -> Response:
    """This process's metrics, then what workers counted in Redis; PLANGATE_STATUS_TOKEN only, never a session."""
    refused = metrics_access(request)
    if refused is not None:
        return refused
    body = generate_latest() + generate_latest(request.app.state.worker_metrics)
    return Response(body, media_type=CONTENT_TYPE_LATEST)


app = create_app()
