"""`GET /runs/{id}` and `GET /runs/{id}/events` through the whole app on real Redis: who may read a run (404
alike for missing and hidden runs), the headers, and the live stream's resume and end."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import redis
import redis.asyncio as aredis
from starlette.testclient import TestClient

from bot import run_stream, session
from bot.app import create_app
from core.runs import Attribute, ResourceDiff, RunGate, RunHead, RunPlan, Verdict, run_id
from plumbing import settings
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.local_redis import free_port
from standin.stack import wait_http
from tests.keys import rsa_pem

KEY = rsa_pem()
TOKEN = "run-page-token-0123456789abcdef"
SIGN_IN = {"GITHUB_APP_ID": "4242", "GITHUB_CLIENT_ID": "Iv1.0123456789abcdef", "GITHUB_CLIENT_SECRET": "c" * 40}
HTML = {"Accept": "text/html,application/xhtml+xml"}
BEARER = {"Authorization": f"Bearer {TOKEN}"}


def app_client(redis_url: str, key: str | None = KEY, **env: str) -> TestClient:
    base = {"GITHUB_WEBHOOK_SECRET": "s", "REDIS_URL": redis_url, "PLANGATE_STATUS_TOKEN": TOKEN, **SIGN_IN, **env}
    if key is not None:
        base["GITHUB_APP_PRIVATE_KEY"] = key
    return TestClient(create_app(settings.load(base)))


def a_head(repo: str = "acme/infra", job: str = "job-1", **fields: object) -> RunHead:
    head = RunHead(
        id=run_id(job, "app|default|infra"),
        kind="plan",
        repo=repo,
        repo_id=7 if repo == "acme/infra" else 8,
        sha="a" * 40,
        project="app",
        dir="infra",
        workspace="default",
        number=3,
        started=time.time(),
    )
    return dataclasses.replace(head, **fields)  # type: ignore[arg-type]


def ended(head: RunHead) -> RunHead:
    return dataclasses.replace(head, ended=time.time(), outcome="planned", ok=True, summary="0 to add, 1 to destroy")


@pytest.fixture
def store(redis_conn: redis.Redis) -> RunStore:
    return RunStore(Records(redis_conn, KEY))


@pytest.fixture
def client(redis_url: str, redis_conn: redis.Redis) -> Iterator[TestClient]:
    with app_client(redis_url) as c:
        yield c


def finished_run(store: RunStore, repo: str = "acme/infra") -> RunHead:
    head = a_head(repo)
    store.start(head)
    store.append(head, ["\x1b[1mPlan:\x1b[0m 0 to add, 1 to destroy"])
    plan = RunPlan((ResourceDiff("terraform_data.x", "delete", True, attributes=(Attribute("input", '"a"', None),)),))
    store.finish(ended(head), plan)
    store.set_gate([head.id], RunGate("failure", "1 to destroy", (Verdict("terraform_data.x", "destroy", "waiting"),)))
    return head


def test_the_token_reads_a_run_page_with_strict_headers(client: TestClient, store: RunStore) -> None:
    head = finished_run(store)
    page = client.get(f"/runs/{head.id}", headers=BEARER)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "terraform_data.x" in page.text and "waiting for approval" in page.text
    assert '<span class="a-b">Plan:</span> 0 to add, 1 to destroy' in page.text
    csp = page.headers["content-security-policy"]
    for part in (
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "style-src 'self'",
        "img-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ):
        assert part in csp
    assert "unsafe" not in csp and "http" not in csp
    assert page.headers["cache-control"] == "no-store" and page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["x-content-type-options"] == "nosniff"
    for name, kind in (("run.css", "text/css"), ("live.js", "text/javascript")):
        served = client.get(f"/static/{name}")
        assert served.status_code == 200 and served.headers["content-type"].startswith(kind)
    assert client.get("/static/../app.py").status_code == 404
    assert client.get("/static/app.py").status_code == 404


def test_missing_hidden_and_malformed_runs_answer_the_same_404(
    client: TestClient, store: RunStore, redis_conn: redis.Redis
) -> None:
    secret = finished_run(store, "acme/secret-project")
    key = session.session_key(SIGN_IN["GITHUB_CLIENT_SECRET"])
    cookie = session.start(redis_conn, key, "bob", ["ACME/Infra"], time.time())
    client.cookies.set(session.SESSION_COOKIE, cookie)
    answers = [
        client.get(f"/runs/{secret.id}", headers=HTML),  # a repository bob cannot read
        client.get(f"/runs/{'b' * 24}", headers=HTML),  # no such run
        client.get("/runs/not-an-id", headers=HTML),
        client.get(f"/runs/{secret.id}x", headers=HTML),
        client.get(f"/runs/{secret.id}/events"),
        client.get(f"/runs/{'b' * 24}/events"),
    ]
    assert {a.status_code for a in answers} == {404}
    assert {a.text for a in answers} == {"Not Found\n"}
    assert {a.headers["content-type"] for a in answers} == {"text/plain; charset=utf-8"}
    assert all("secret-project" not in a.text for a in answers)
    mine = finished_run(store, "acme/infra")
    assert client.get(f"/runs/{mine.id}", headers=HTML).status_code == 200  # ACME/Infra read access: shown
    assert client.get(f"/runs/{secret.id}", headers=BEARER).status_code == 200  # the token sees everything


def test_signed_out_is_sent_to_sign_in_and_wrong_tokens_are_refused(client: TestClient, store: RunStore) -> None:
    head = finished_run(store)
    browser = client.get(f"/runs/{head.id}", headers=HTML, follow_redirects=False)
    assert browser.status_code == 302 and "/login/oauth/authorize?" in browser.headers["location"]
    assert client.get(f"/runs/{head.id}", follow_redirects=False).status_code == 401
    wrong = client.get(f"/runs/{head.id}", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and "terraform_data" not in wrong.text
    assert client.get(f"/runs/{head.id}/events", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_without_the_app_key_every_run_page_is_404(redis_url: str, redis_conn: redis.Redis, store: RunStore) -> None:
    head = finished_run(store)
    with app_client(redis_url, key=None) as c:
        assert c.get(f"/runs/{head.id}", headers=BEARER).status_code == 404
        assert c.get(f"/runs/{head.id}/events", headers=BEARER).status_code == 404


def test_a_record_sealed_with_another_key_is_not_shown(client: TestClient, redis_conn: redis.Redis) -> None:
    forged = RunStore(Records(redis_conn, rsa_pem.__wrapped__()))
    head = finished_run(forged)
    assert client.get(f"/runs/{head.id}", headers=BEARER).status_code == 404
    assert client.get(f"/runs/{head.id}/events", headers=BEARER).status_code == 404


def test_redis_down_answers_503(redis_url: str) -> None:
    with app_client(redis_url, REDIS_URL=f"redis://127.0.0.1:{free_port()}/0") as c:
        answer = c.get(f"/runs/{'a' * 24}", headers=BEARER)
        assert answer.status_code == 503 and "Redis unavailable" in answer.text


def parse_events(body: str) -> list[dict[str, str]]:
    found = []
    for block in body.split("\n\n"):
        fields: dict[str, str] = {}
        for row in block.splitlines():
            name, _, rest = row.partition(":")
            fields[name] = rest.removeprefix(" ")
        if fields:
            found.append(fields)
    return found


def test_an_ended_run_streams_what_follows_the_resume_point_then_end(client: TestClient, store: RunStore) -> None:
    head = a_head()
    store.start(head)
    store.append(head, ["one", "\x1b[31mtwo <b>\x1b[0m", "three"])
    store.finish(ended(head), None)
    ids = [line.id for line in store.lines_after(head.id, "0-0")]
    for headers, query in (({"Last-Event-ID": ids[0]}, f"?after={ids[2]}"), ({}, f"?after={ids[0]}")):
        answer = client.get(f"/runs/{head.id}/events{query}", headers={**BEARER, **headers})
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
        assert "connect-src 'self'" in answer.headers["content-security-policy"]
        events = parse_events(answer.text)
        assert events[0] == {"retry": "2000"}
        lines = [e for e in events if e.get("event") == "line"]
        assert [e["id"] for e in lines] == ids[1:]  # Last-Event-ID wins over ?after=
        assert [json.loads(e["data"]) for e in lines] == [
            {"id": ids[1], "html": '<span class="a-f1">two &lt;b&gt;</span>'},
            {"id": ids[2], "html": "three"},
        ]
        assert events[-1] == {"event": "end", "data": "{}"}
    everything = parse_events(client.get(f"/runs/{head.id}/events?after=junk", headers=BEARER).text)
    assert [e["id"] for e in everything if e.get("event") == "line"] == ids  # no valid resume point: from the start


def test_a_running_stream_closes_at_its_limit_without_end(redis_url: str, store: RunStore) -> None:
    head = a_head()
    store.start(head)
    store.append(head, ["first"])
    with app_client(redis_url, PLANGATE_RUN_STREAM_SECONDS="1") as c:
        events = parse_events(c.get(f"/runs/{head.id}/events", headers=BEARER).text)
    assert [e.get("event") for e in events] == [None, "line"]


def collect(
    redis_url: str, store: RunStore, head: RunHead, after: str, limit: float, closing: threading.Event | None = None
) -> list[str]:
    closing = closing or threading.Event()

    async def go() -> list[str]:
        conn = aredis.Redis.from_url(redis_url, socket_timeout=run_stream.SOCKET_TIMEOUT)
        try:
            return [chunk async for chunk in run_stream.events(conn, store, head.id, after, limit, closing)]
        finally:
            await conn.aclose()

    return asyncio.run(go())


def test_lines_written_while_a_reader_waits_reach_it_in_order_then_end(redis_url: str, store: RunStore) -> None:
    head = a_head()
    store.start(head)
    store.append(head, ["before"])
    (before,) = store.lines_after(head.id, "0-0")

    def worker() -> None:
        for n in range(3):
            time.sleep(0.3)
            store.append(head, [f"line {n}"])
        store.append(head, ["last words"])
        store.finish(ended(head), None)

    writing = threading.Thread(target=worker)
    writing.start()
    chunks = collect(redis_url, store, head, before.id, 30)
    writing.join()
    assert chunks[-1] == run_stream.END_EVENT  # ended by the run's end, not by the 30 s limit
    assert run_stream.KEEPALIVE not in chunks  # (which a 15 s silence would have shown first)
    texts = [json.loads(e["data"])["html"] for e in parse_events("".join(chunks)) if e.get("event") == "line"]
    assert texts == ["line 0", "line 1", "line 2", "last words"]
    assert chunks[-1] == run_stream.END_EVENT


def test_silence_is_kept_alive(redis_url: str, store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_stream, "KEEPALIVE_SECONDS", 0.5)
    monkeypatch.setattr(run_stream, "POLL_MS", 300)
    head = a_head()
    store.start(head)
    chunks = collect(redis_url, store, head, "0-0", 2)
    assert chunks.count(run_stream.KEEPALIVE) >= 2 and run_stream.END_EVENT not in chunks


def test_a_forged_line_is_skipped_but_passed(redis_url: str, store: RunStore, redis_conn: redis.Redis) -> None:
    head = a_head()
    store.start(head)
    store.append(head, ["real one"])
    redis_conn.xadd(f"plangate:run:{head.id}:out", {"l": b"s1.AAAA.forged <script>"})
    store.append(head, ["real two"])
    store.finish(ended(head), None)
    body = "".join(collect(redis_url, store, head, "0-0", 10))
    assert "forged" not in body
    assert [json.loads(e["data"])["html"] for e in parse_events(body) if e.get("event") == "line"] == [
        "real one",
        "real two",
    ]


def test_links_and_the_stream_stay_under_the_public_path(
    client: TestClient, store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PLANGATE_PUBLIC_URL", "https://gate.example.org/plangate/")
    head = a_head()
    store.start(head)
    page = client.get(f"/runs/{head.id}", headers=BEARER).text
    assert 'href="/plangate/static/run.css"' in page and 'src="/plangate/static/live.js"' in page
    assert f'data-events="/plangate/runs/{head.id}/events"' in page and 'href="/plangate/"' in page


def test_a_stop_ends_waiting_streams_at_their_next_poll(redis_url: str, store: RunStore) -> None:
    head = a_head()
    store.start(head)
    closing = threading.Event()
    threading.Timer(0.5, closing.set).start()
    chunks = collect(redis_url, store, head, "0-0", 60, closing)
    assert run_stream.KEEPALIVE not in chunks  # closed by the stop, before 15 s of silence, not at the limit
    assert run_stream.END_EVENT not in chunks  # not the run's end: the browser reconnects


@pytest.mark.slow
def test_plangate_web_stops_promptly_with_a_stream_open(redis_url: str, store: RunStore, tmp_path: Path) -> None:
    """uvicorn waits for open responses before it exits; `plangate web` ends the streams on SIGTERM."""
    head = a_head()
    store.start(head)
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "GITHUB_WEBHOOK_SECRET": "s",
        "GITHUB_APP_ID": "4242",
        "GITHUB_APP_PRIVATE_KEY": KEY,
        "REDIS_URL": redis_url,
        "PLANGATE_STATUS_TOKEN": TOKEN,
    }
    web = subprocess.Popen(
        [sys.executable, "-m", "plangate", "web", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        got: list[str] = []

        def read() -> None:
            url = f"http://127.0.0.1:{port}/runs/{head.id}/events"
            with httpx.stream("GET", url, headers=BEARER, timeout=None) as r:
                got.extend(r.iter_text())

        reader = threading.Thread(target=read)
        reader.start()
        deadline = time.monotonic() + 10
        while not got and time.monotonic() < deadline:
            time.sleep(0.05)
        assert got, "the stream did not open"
        web.send_signal(signal.SIGTERM)
        web.wait(15)  # a stream left open would hold the shutdown until its 600 s limit
        reader.join(5)
        assert not reader.is_alive()
        log = web.stdout.read().decode() if web.stdout else ""
        assert "ERROR" not in log and "Traceback" not in log, log
    finally:
        if web.poll() is None:
            web.kill()
            web.wait()


def test_streams_past_the_process_s_cap_answer_503_and_a_closed_one_frees_its_slot(
    client: TestClient, store: RunStore
) -> None:
    """Each open stream holds a Redis connection: past MAX_STREAMS a reader gets 503, not the workers' Redis."""
    head = finished_run(store)
    slots: run_stream.StreamSlots = client.app.state.stream_slots  # type: ignore[attr-defined]
    slots.taken = slots.limit
    busy = client.get(f"/runs/{head.id}/events", headers=BEARER)
    assert busy.status_code == 503 and busy.headers["retry-after"] == "30"
    assert busy.headers["content-security-policy"].startswith("default-src 'none'")
    slots.taken = slots.limit - 1
    ok = client.get(f"/runs/{head.id}/events", headers=BEARER)
    assert ok.status_code == 200 and parse_events(ok.text)[-1] == {"event": "end", "data": "{}"}
    assert slots.taken == slots.limit - 1  # the stream that ended gave its slot back
