"""workers.flows.run_records: runs opened and ended by the flows, masked like comments, never failing a flow."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from core import redis_keys
from core.contract import PlanRequest
from core.projects import Project
from core.runs import run_id
from plumbing import settings as settings_module
from plumbing.records import Records
from tests.keys import rsa_pem
from workers.adapters.github.auth import TokenCache
from workers.adapters.terraform.pipeline import failure
from workers.adapters.terraform.sandbox import Sandbox
from workers.adapters.terraform.steps import Terraform
from workers.context import WorkerContext
from workers.flows import run_records
from workers.flows.run_records import RESTARTED, Where

KEY = rsa_pem()
KEY_LINE = KEY.splitlines()[2]
PROJECT = Project("app", "infra")
WHERE = Where("plan", "job-1", "acme/infra", 7, "a" * 40, 3)


def _ctx(conn: redis.Redis, tmp_path: Path) -> WorkerContext:
    loaded = settings_module.load({"PLANGATE_WORKDIR": str(tmp_path), "PLANGATE_MASK_PATTERNS": "srv-[0-9]+"})
    settings = replace(loaded, app_id=1, private_key=KEY)
    tokens = TokenCache(conn, app_id=1, private_key=KEY, api_url="http://127.0.0.1:9")
    return WorkerContext(settings, conn, tokens, Records(conn, KEY), Sandbox())


def _lines(ctx: WorkerContext, page: str) -> list[str]:
    return [line.text for line in ctx.run_store.lines_after(page, "0-0")]


def test_a_run_streams_masked_output_and_ends_with_a_masked_summary(redis_conn: redis.Redis, tmp_path: Path) -> None:
    ctx = _ctx(redis_conn, tmp_path)
    run = run_records.open_run(ctx, WHERE, PROJECT, "/usr/bin/terraform", ["tok-[0-9]+", "srv-[0-9]+"])
    assert run.id == run_id("job-1", PROJECT.identity) and run.sink is not None
    head = ctx.run_store.head(run.id)
    assert head is not None and head.running and (head.tool, head.number, head.kind) == ("terraform", 3, "plan")
    run.sink("stdout", f"value tok-1 and srv-2\n{KEY_LINE}\n".encode())
    run.finish("plan failed", False, f"\n  Error: tok-77 leaked {KEY_LINE}\nsecond line")
    stored = ctx.run_store.read(run.id)
    assert stored is not None and not stored.head.running
    assert (stored.head.outcome, stored.head.ok) == ("plan failed", False)
    assert stored.head.summary == "Error: (sensitive value) leaked (sensitive value)"
    assert [line.text for line in stored.lines] == [
        "value (sensitive value) and (sensitive value)",
        "(sensitive value)",
    ]
    run.finish("planned", True, "again")  # a run ends once
    assert ctx.run_store.read(run.id).head.outcome == "plan failed"  # type: ignore[union-attr]


def test_a_block_that_raises_ends_its_run_as_failed_and_raises_on(redis_conn: redis.Redis, tmp_path: Path) -> None:
    ctx = _ctx(redis_conn, tmp_path)
    with pytest.raises(RuntimeError), run_records.recorded(ctx, WHERE, PROJECT, "tofu", [], "plan failed") as run:
        assert run is not None
        raise RuntimeError(f"boom {KEY_LINE}")
    head = ctx.run_store.head(run_id("job-1", PROJECT.identity))
    assert head is not None and (head.outcome, head.ok) == ("plan failed", False)
    assert head.summary == "RuntimeError: boom (sensitive value)"

    with run_records.recorded(ctx, replace(WHERE, job_id="job-2"), PROJECT, "tofu", []):
        pass  # ended without a word: still ended
    left = ctx.run_store.head(run_id("job-2", PROJECT.identity))
    assert left is not None and (left.outcome, left.ok) == ("stopped", False)


def test_no_job_no_run_and_unknown_masks_keep_no_output(redis_conn: redis.Redis, tmp_path: Path) -> None:
    ctx = _ctx(redis_conn, tmp_path)
    with run_records.recorded(ctx, None, PROJECT, "tofu", []) as none:
        assert none is None
    assert not redis_conn.keys("plangate:run*")

    run = run_records.open_run(ctx, WHERE, PROJECT, "tofu", None)
    assert run.sink is None
    assert run.streamed(Terraform("tofu", {})).live is None
    run.finish("planned", True, "Plan: tok-1 to add")
    stored = ctx.run_store.read(run.id)
    assert stored is not None and stored.lines == () and stored.head.summary == "" and stored.plan is None


def test_a_job_run_again_starts_its_run_again_saying_so(redis_conn: redis.Redis, tmp_path: Path) -> None:
    ctx = _ctx(redis_conn, tmp_path)
    first = run_records.open_run(ctx, WHERE, PROJECT, "tofu", [])
    assert first.sink is not None
    first.sink("stdout", b"from the attempt that died\n")
    first.sink.close()  # its worker died: never finished
    again = run_records.open_run(ctx, WHERE, PROJECT, "tofu", [])
    again.finish("planned", True, "")
    assert again.id == first.id and _lines(ctx, again.id) == [RESTARTED]


def test_died_ends_only_a_run_still_running(redis_conn: redis.Redis, tmp_path: Path) -> None:
    ctx = _ctx(redis_conn, tmp_path)
    run = run_records.open_run(ctx, replace(WHERE, kind="apply"), PROJECT, "tofu", [])
    assert run.sink is not None
    run.sink.close()
    run_records.died(ctx, "job-1", PROJECT, "the worker died during terraform apply")
    head = ctx.run_store.head(run.id)
    assert head is not None and (head.outcome, head.ok, head.summary) == (
        "died",
        False,
        "the worker died during terraform apply",
    )
    run_records.died(ctx, "job-1", PROJECT, "again")
    assert ctx.run_store.head(run.id).summary == "the worker died during terraform apply"  # type: ignore[union-attr]
    assert run_records.page_of(ctx, "job-1", PROJECT) == run.id and run_records.page_of(ctx, "nope", PROJECT) is None


def test_a_redis_that_fails_never_fails_the_flow(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    gone = redis.Redis(host="127.0.0.1", port=9, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    ctx = _ctx(gone, tmp_path)
    caplog.set_level(logging.WARNING)
    with run_records.recorded(ctx, WHERE, PROJECT, "tofu", []) as run:
        assert run is not None and run.sink is None
        run.finish("planned", True, "fine")
    run_records.died(ctx, "job-1", PROJECT, "x")
    assert run_records.page_of(ctx, "job-1", PROJECT) is None
    assert all("run_page" in json.loads(r.getMessage()) for r in caplog.records if r.name == "plangate.runs")


def test_plan_runs_know_their_kind_and_masks(
    redis_conn: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _ctx(redis_conn, tmp_path)
    req = PlanRequest(
        installation_id=1,
        repo_id=7,
        repo="acme/infra",
        clone_url="",
        default_branch="main",
        pr=3,
        sha="b" * 40,
        author="a",
    )
    monkeypatch.setattr(run_records, "current_job_id", lambda: None)
    assert run_records.of_plan(req, PROJECT) is None
    monkeypatch.setattr(run_records, "current_job_id", lambda: "job-9")
    assert run_records.of_plan(req, PROJECT) == Where("plan", "job-9", "acme/infra", 7, "b" * 40, 3, None)
    group = replace(req, pr=0, code_sha="c" * 40)
    assert run_records.of_plan(group, PROJECT) == Where(
        "merge-group", "job-9", "acme/infra", 7, "b" * 40, None, "c" * 40
    )

    assert run_records.plan_masks(ctx, req) is None  # the dispatch's record is gone: no output kept
    meta = json.dumps({"mask_patterns": ["tok-[0-9]+"]})
    ctx.records.set(redis_keys.plan_meta(7, 3, "b" * 40), meta)
    assert run_records.plan_masks(ctx, req) == ["srv-[0-9]+", "tok-[0-9]+"]


def test_a_plan_that_cannot_be_drawn_costs_the_drawing_not_the_run(
    redis_conn: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _ctx(redis_conn, tmp_path)

    def broken(*args: object) -> None:
        raise KeyError("a bug in drawing")

    monkeypatch.setattr(run_records, "run_plan", broken)
    run = run_records.open_run(ctx, WHERE, PROJECT, "tofu", [])
    run.finish("planned", True, "1 to add", result=failure(PROJECT, "a" * 40, "x"))
    stored = ctx.run_store.read(run.id)
    assert (
        stored is not None
        and stored.plan is None
        and (stored.head.outcome, stored.head.summary)
        == (
            "planned",
            "1 to add",
        )
    )


def test_a_publish_ends_the_runs_its_dead_plan_jobs_left_running(redis_conn: redis.Redis, tmp_path: Path) -> None:
    ctx = _ctx(redis_conn, tmp_path)
    dead = run_records.open_run(ctx, WHERE, PROJECT, "tofu", [])
    done = run_records.open_run(ctx, replace(WHERE, job_id="job-2"), PROJECT, "tofu", [])
    done.finish("planned", True, "1 to add")
    assert dead.sink is not None
    dead.sink.close()
    result = failure(PROJECT, "a" * 40, "the plan job died")
    run_records.plans_ended(ctx, [("job-1", result), ("job-2", result), ("job-never-ran", result)])
    assert (ctx.run_store.head(dead.id).outcome, ctx.run_store.head(done.id).outcome) == ("died", "planned")  # type: ignore[union-attr]
    assert ctx.run_store.head(run_id("job-never-ran", PROJECT.identity)) is None
