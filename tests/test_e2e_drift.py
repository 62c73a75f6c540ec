"""Drift detection end to end: installations → targets → tick → scheduled check → one issue per project."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from rq import Queue

from core import redis_keys
from core.contract import PLANS_QUEUE, Jobs
from core.drift_schedule import DriftTarget
from plumbing import settings as settings_module
from plumbing.records import Records
from standin.stack import Stack, running_stack
from standin.state import Issue, Repo
from tests.tfproject import apply_directly, main_tf, tool
from workers.adapters.github.auth import TokenCache
from workers.adapters.terraform.sandbox import Sandbox
from workers.context import WorkerContext
from workers.flows import drift

pytestmark = pytest.mark.e2e
CONFIG = 'version: 1\nprojects:\n  - name: app\n    dir: infra\n    drift:\n      schedule: "0 3 * * *"\n'


def _issues(stack: Stack, repo: Repo) -> list[Issue]:
    return [i for (rid, _), i in sorted(stack.gh.state.issues.items()) if rid == repo.id]


def _runs(conn: redis.Redis) -> list[dict[str, object]]:
    return [json.loads(r) for r in conn.lrange("plangate:runs", 0, -1) if json.loads(r).get("kind") == "drift"]


def _wait_runs(stack: Stack, conn: redis.Redis, count: int) -> dict[str, object]:
    def newest() -> dict[str, object] | None:
        runs = _runs(conn)
        return runs[0] if len(runs) >= count else None

    return stack.wait_for(f"drift check #{count}", newest)


def test_drift_opens_updates_and_closes_one_issue(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = tmp_path / "state" / "terraform.tfstate"
    text = main_tf(state, {"keep": "a", "other": "b"})
    apply_directly(tmp_path / "applied", text)
    with running_stack(tmp_path, redis_url) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {"infra/main.tf": text, ".plangate.yml": CONFIG})
        gh.set_permission(repo, "bob", "write")
        queue = Queue(PLANS_QUEUE, connection=redis_conn)

        queue.enqueue(Jobs.REFRESH_DRIFT_TARGETS)
        stack.wait_for("the drift targets", lambda: redis_conn.get(redis_keys.DRIFT_TARGETS))
        targets = json.loads(redis_conn.get(redis_keys.DRIFT_TARGETS) or b"[]")
        assert [(t["repo"], t["project"], t["schedule"]) for t in targets] == [("acme/infra", "app", "0 3 * * *")]

        # reality changes outside Terraform: the resource is dropped from the state
        subprocess.run(
            [tool(), "state", "rm", "terraform_data.other"], cwd=tmp_path / "applied", check=True, capture_output=True
        )
        settings = settings_module.load(stack.env)
        key = settings.private_key or ""
        ctx = WorkerContext(
            settings,
            redis_conn,
            TokenCache(redis_conn, app_id=4242, private_key=key, api_url=settings.api_url),
            Records(redis_conn, key),
            Sandbox(),
        )
        assert drift.tick(ctx, datetime(2026, 11, 30, 2, 59, tzinfo=UTC)) == []
        assert len(drift.tick(ctx, datetime(2026, 11, 30, 3, 0, 30, tzinfo=UTC))) == 1
        assert _wait_runs(stack, redis_conn, 1)["result"] == "drift"
        (issue,) = _issues(stack, repo)
        assert issue.title == "Drift in app" and issue.state == "open"
        assert "`terraform_data.other`" in (issue.body or "")

        gh.comment(repo, issue.number, "bob", "/plan")  # a second check, by hand
        assert _wait_runs(stack, redis_conn, 2)["result"] == "drift"
        assert len(_issues(stack, repo)) == 1, "later checks edit the same issue"
        edits = [r for r in gh.state.requests if r.method == "PATCH" and r.path.endswith(f"/issues/{issue.number}")]
        assert len(edits) == 1 and "`terraform_data.other`" in (_issues(stack, repo)[0].body or "")  # edited in place

        apply_directly(tmp_path / "applied", text)  # drift resolved by hand
        queue.enqueue(Jobs.DRIFT_CHECK, kwargs={"target": DriftTarget.from_plain(targets[0])})
        assert _wait_runs(stack, redis_conn, 3)["result"] == "clean"
        (closed,) = _issues(stack, repo)
        assert closed.state == "closed"
        closing = [c.body for c in gh.comments_on(repo, closed.number) if c.user.login == "plangate[bot]"]
        assert any("No drift at" in body for body in closing)
