"""The last word's parts on their own: what it says (pure), when it is owed (real Redis and RQ), how an
outage brings a job back, and the held apply a blocked comment carries, sealed."""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from dataclasses import replace
from http import HTTPStatus

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st
from rq import Queue, Retry
from rq.job import Job

from core import redis_keys
from core.apply_outcome import ApplyOutcome
from core.contract import ApplyConversation, Jobs, PushRequest
from core.gated import Gated
from core.projects import Project
from core.render.apply_status import apply_status
from core.render.lost import (
    KILLED,
    OUTAGE,
    apply_lost_status,
    lost_plan_statuses,
    render_apply_lost,
    render_command_lost,
    render_plan_lost,
    why_text,
)
from core.render.marker import parse_marker
from plumbing.job_options import GAVE_UP
from plumbing.records import derive_marker_key
from tests.keys import rsa_pem
from workers import watchdog
from workers.adapters.store import applies as apply_store

PUSH = PushRequest(1, 7, "acme/infra", "https://github.example/acme/infra.git", "main", "a" * 40, "b" * 40)
PROJECT = Project(name="infra", dir="infra")
KEY = derive_marker_key(rsa_pem())


def _status(outcomes: dict[str, str]) -> tuple[str, str]:
    """apply_status of outcomes as they are stored."""
    return apply_status({project: ApplyOutcome.read(text) for project, text in outcomes.items()})


def test_why_says_what_stopped_the_job() -> None:
    assert "stopped on every try" in why_text(KILLED, outage_seconds=3600)
    assert why_text(OUTAGE, outage_seconds=3600) == "GitHub could not be reached for 60 minutes"
    assert why_text(OUTAGE, outage_seconds=45) == "GitHub could not be reached for 45 seconds"
    assert why_text("KeyError", outage_seconds=1) == "it failed inside plangate (KeyError)"


def test_a_lost_plan_is_never_a_verdict() -> None:
    said = why_text(KILLED, outage_seconds=3600)
    statuses = lost_plan_statuses(said)
    assert [(c, s) for c, s, _ in statuses] == [("plangate/plan", "error"), ("plangate/destroy", "error")]
    assert all(len(d) <= 140 and "/plan" in d for _, _, d in statuses)
    body = render_plan_lost(pr=3, sha="c" * 40, why_said=said)
    kind, fields = parse_marker(body) or ("", {})
    assert kind == "plan" and fields == {"parts": 1, "part": 1, "pr": 3, "sha": "c" * 40, "lost": True}
    assert "Nothing was applied" in body and "`/plan`" in body


def test_a_lost_apply_says_nothing_was_applied_and_how_to_run_it_again() -> None:
    body = render_apply_lost(sha="d" * 40, why_said="the worker was stopped", projects=["infra"])
    assert body.startswith("<!-- plangate:apply-lost ") and "The worker was stopped." in body
    assert "never started" in body and "Comment `/plan` here" in body
    state, description = apply_lost_status("the worker was stopped")
    assert state == "error" and len(description) <= 140
    assert _status({"infra": "lost", "dns": "applied"})[0] == "error"
    assert "lost before it started in infra" in _status({"infra": "lost"})[1]
    assert _status({"infra": "error", "dns": "lost"})[1].startswith("apply died in infra")


def test_a_lost_command_answers_the_comment_it_was() -> None:
    body = render_command_lost(command="approve-destroy", reply_to=99, why_said="it failed")
    assert parse_marker(body) == ("reply", {"command": "approve-destroy", "outcome": "lost", "reply_to": 99})
    assert "Nothing changed" in body


def _held(number: int = 12, gated: int = 2) -> apply_store.BlockedApply:
    where = ApplyConversation(number=number, is_pr=True, authors=("alice",), approved_on="e" * 40)
    digest = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(gated)]  # as objects are
    gates = [Gated(key=f"infra\0terraform_data.r{i}", object=digest[i]) for i in range(gated)]
    return apply_store.hold(PUSH, PROJECT, where, number, True, gates, comment_id=5, blocked_at="2026-12-03T00:00:00Z")


def test_a_held_apply_reads_back_from_its_sealed_comment_only_where_it_was_written() -> None:
    held = _held()
    head = apply_store.held_marker(held, KEY)
    assert head is not None
    body = f"{head}\n## Apply blocked\n"
    assert apply_store.held_from(body, KEY, 7, 12) == replace(held, comment_id=None, blocked_at=None)
    assert apply_store.held_from(body, KEY, 7, 13) is None  # copied to another PR or issue
    assert apply_store.held_from(body, KEY, 8, 12) is None  # or another repository
    assert apply_store.held_from(body, bytes(32), 7, 12) is None  # sealed with another key
    assert apply_store.held_from("note\n" + body, KEY, 7, 12) is None  # it must open the comment


@given(st.integers(min_value=0, max_value=len("<!-- plangate:apply-blocked ") + 400))
def test_any_changed_byte_of_a_sealed_held_apply_counts_for_nothing(position: int) -> None:
    head = apply_store.held_marker(_held(), KEY)
    assert head is not None
    at = min(position, len(head) - 5)
    changed = head[:at] + ("0" if head[at] != "0" else "1") + head[at + 1 :]
    assert apply_store.held_from(changed, KEY, 7, 12) is None


def test_a_held_apply_too_large_to_seal_is_left_unsealed() -> None:
    assert apply_store.held_marker(_held(gated=4000), KEY) is None


def _failed_job(conn: redis.Redis, func: str, retries_left: int, **kwargs: object) -> Job:
    job = Queue("plangate-plans", connection=conn).enqueue(func, kwargs=kwargs, retry=Retry(max=2))
    job.retries_left = retries_left
    return job


def test_the_last_word_is_owed_once_on_the_last_try_of_a_job_that_reports(redis_conn: redis.Redis) -> None:
    job = _failed_job(redis_conn, Jobs.PLAN_PR, 1, request="r")
    watchdog.owed(redis_conn, job, KILLED)
    assert not redis_conn.exists(Job.key_for(f"{job.id}-last-word"))  # it will run again
    job.retries_left = 0
    watchdog.owed(redis_conn, job, KILLED)
    watchdog.owed(redis_conn, job, KILLED)  # RQ may report one death twice: said once
    said = Job.fetch(f"{job.id}-last-word", connection=redis_conn)
    assert said.func_name == Jobs.LAST_WORD
    assert said.kwargs == {"job": Jobs.PLAN_PR, "kwargs": {"request": "r"}, "why": KILLED}
    assert Queue("plangate-commands", connection=redis_conn).job_ids == [said.id]


def test_no_last_word_for_jobs_others_report_for(redis_conn: redis.Redis) -> None:
    plan = _failed_job(redis_conn, Jobs.PLAN_PROJECT, 0)  # its publish reports it
    watchdog.owed(redis_conn, plan, KILLED)
    in_place = _failed_job(redis_conn, Jobs.PLAN_PR, 0)
    Queue("plangate-plans", connection=redis_conn).enqueue("tests.jobs.echo.echo", job_id=f"{in_place.id}-fallback")
    watchdog.owed(redis_conn, in_place, KILLED)  # it planned in place: the publish it left reports
    assert Queue("plangate-commands", connection=redis_conn).job_ids == []


def test_a_payload_this_version_cannot_read_is_counted_not_crashed_on(redis_conn: redis.Redis) -> None:
    """A job enqueued by another version whose classes this one lacks: no last word can name its PR,
    but the failure callback must not fail too; the job is counted for the operator."""
    job = _failed_job(redis_conn, Jobs.APPLY_PROJECT, 0, push="p")
    redis_conn.hset(Job.key_for(job.id), "data", zlib.compress(b"\x80\x05not a pickle"))
    unread = Job.fetch(job.id, connection=redis_conn)
    unread.retries_left = 0
    watchdog.owed(redis_conn, unread, KILLED)
    assert Queue("plangate-commands", connection=redis_conn).job_ids == []
    assert redis_conn.hget(redis_keys.JOBS, "unreadable") == b"1"


def test_the_failure_callback_names_what_stopped_the_job(redis_conn: redis.Redis) -> None:
    from gidgethub import GitHubBroken
    from rq.exceptions import AbandonedJobError

    for kind, value, why in (
        (AbandonedJobError, AbandonedJobError(), KILLED),
        (GitHubBroken, GitHubBroken(HTTPStatus.SERVICE_UNAVAILABLE), OUTAGE),
        (KeyError, KeyError("x"), "KeyError"),
    ):
        job = _failed_job(redis_conn, Jobs.HANDLE_COMMAND, 0, request=why)
        watchdog.failed(job, redis_conn, kind, value, None)
        assert Job.fetch(f"{job.id}-last-word", connection=redis_conn).kwargs["why"] == why
    assert redis_conn.hget("plangate:metrics:jobs", "abandoned") == b"1"


def test_an_outage_brings_a_job_back_later_each_time_until_the_window_has_passed(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from plumbing import settings
    from workers import rescheduling

    loaded = replace(settings.load({}), github_retry_seconds=2.0, outage_window=30.0)
    monkeypatch.setattr(rescheduling, "context", lambda: type("Ctx", (), {"settings": loaded})())
    job = _failed_job(redis_conn, Jobs.PUBLISH_PLAN, 2)
    pauses = []
    for _ in range(4):
        left = job.retries_left or 0
        rescheduling.through_outage(job)
        assert job.retries_left == left + 1
        assert job.retry_intervals is not None
        pauses.append(job.retry_intervals[0])
        job.retries_left = left  # RQ spends the re-run it was given
    assert pauses == [2, 4, 8, 16]
    assert Job.fetch(job.id, connection=redis_conn).meta[rescheduling.OUTAGE_TRIES] == 4
    job.meta[rescheduling.OUTAGE_SINCE] = time.time() - 31
    rescheduling.through_outage(job)
    assert job.retries_left == 0 and job.meta[GAVE_UP] == OUTAGE  # a killed horse's re-runs spent too
    assert json.loads(json.dumps(Job.fetch(job.id, connection=redis_conn).meta[GAVE_UP])) == OUTAGE
