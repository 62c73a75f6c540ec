"""Run pages' records end to end (real workers, real terraform, the stand-in): a PR plan, a merge's apply and a
drift check each leave a run with its head, its plan drawn as a diff and terraform's output, masked, stored
while terraform still runs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import redis
from rq import Queue

from core import redis_keys
from core.contract import PLANS_QUEUE, Jobs
from core.drift_schedule import DriftTarget
from core.runs import RunHead, Stored
from plumbing import settings as settings_module
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import applied_state, planned, status
from tests.tfproject import main_tf, tool

pytestmark = pytest.mark.e2e

CONFIG = (
    "version: 1\ngate_code_at_apply: false\nmask_patterns: ['tok-[0-9]+']\n"
    'projects:\n  - name: app\n    dir: infra\n    drift:\n      schedule: "0 3 * * *"\n'
)


# terraform, except that `plan` first prints to stderr for five seconds (a slow data source's program would).
CHATTY_PLAN = """#!/bin/sh
if [ "$1" = "plan" ]; then
  for i in 1 2 3 4 5; do echo "reading $i tok-77$i" >&2; sleep 1; done
fi
exec {real} "$@"
"""


def _store(stack: Stack, conn: redis.Redis) -> RunStore:
    """The run records as the web process reads them: sealed with the App key the workers hold."""
    return RunStore(Records(conn, settings_module.load(stack.env).private_key or ""))


def _runs(stack: Stack, store: RunStore, repo: Repo, sha: str, kind: str, ended: bool = True) -> list[RunHead]:
    """Wait for a run of `kind` about `sha` (ended, unless `ended` is False); the runs of that kind."""

    def probe() -> list[RunHead] | None:
        found = [h for h in store.siblings(repo.id, sha) if h.kind == kind]
        return found if found and (not ended or all(not h.running for h in found)) else None

    return stack.wait_for(f"the {kind} run of {sha[:7]}", probe, timeout=180)


def _logged(stack: Stack, conn: redis.Redis, kind: str) -> list[str | None]:
    """Wait for the run log's entries of `kind` (written as the flow reports, after its run ended); their runs."""

    def probe() -> list[str | None] | None:
        entries = [json.loads(e) for e in conn.lrange(redis_keys.RUNS, 0, -1)]
        return [e.get("run") for e in entries if e["kind"] == kind] or None

    return stack.wait_for(f"the run log's {kind} entry", probe)


def _texts(stored: Stored) -> list[str]:
    return [line.text for line in stored.lines]


def test_a_pr_plan_and_a_drift_check_are_runs_with_their_diff_and_masked_output(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    with running_stack(tmp_path, redis_url) as stack:
        gh, store = stack.gh, _store(stack, redis_conn)
        repo = gh.create_repo(
            "acme", "infra", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}), ".plangate.yml": CONFIG}
        )
        gh.set_permission(repo, "alice", "write")
        files = {"infra/main.tf": main_tf(state, {"keep": "a", "fresh": "tok-12345"})}
        pr = gh.open_pr(repo, "swap", "alice", "Swap", files)
        planned(stack, repo, pr.head_sha)

        (head,) = _runs(stack, store, repo, pr.head_sha, "plan")
        assert (head.repo, head.number, head.project, head.dir) == ("acme/infra", pr.number, "app", "infra")
        assert (head.outcome, head.ok, head.summary) == ("planned", True, "1 to add, 0 to change, 1 to destroy")
        assert head.ended is not None and head.ended >= head.started > 0
        stored = store.read(head.id)
        assert stored is not None and stored.plan is not None
        drawn = [(r.address, r.action, r.gated) for r in stored.plan.resources]
        assert drawn == [("terraform_data.doomed", "delete", True), ("terraform_data.fresh", "create", False)]
        doomed, fresh = stored.plan.resources  # attribute by attribute, from the plan's own JSON
        assert {a.path: (a.before is not None, a.after) for a in doomed.attributes}["id"] == (True, None)
        assert any(a.path == "id" and a.before is None and a.after == "(known after apply)" for a in fresh.attributes)
        texts = _texts(stored)
        assert f"$ {head.tool} init -input=false -no-color" in texts
        assert any(t.startswith(f"$ {head.tool} plan ") and "-out=plangate.tfplan" in t for t in texts)
        assert "Plan: 1 to add, 0 to change, 1 to destroy." in texts
        assert any("terraform_data.doomed will be destroyed" in t for t in texts)
        assert any("(sensitive value)" in t for t in texts)
        assert "tok-12345" not in json.dumps([texts, str(stored.plan)])

        # A drift check of main: the resource dropped from the state is drift.
        subprocess.run(
            [tool(), "state", "rm", "terraform_data.doomed"], cwd=tmp_path / "applied", check=True, capture_output=True
        )
        queue = Queue(PLANS_QUEUE, connection=redis_conn)
        queue.enqueue(Jobs.REFRESH_DRIFT_TARGETS)
        stack.wait_for("the drift targets", lambda: redis_conn.get(redis_keys.DRIFT_TARGETS))
        (target,) = json.loads(redis_conn.get(redis_keys.DRIFT_TARGETS) or b"[]")
        queue.enqueue(Jobs.DRIFT_CHECK, kwargs={"target": DriftTarget.from_plain(target)})
        main = gh.head(repo, "main") or ""
        (drift,) = _runs(stack, store, repo, main, "drift")
        assert (drift.outcome, drift.ok, drift.summary) == ("drift", False, "1 to add, 0 to change, 0 to destroy")
        checked = store.read(drift.id)
        assert checked is not None and checked.plan is not None
        assert [(r.address, r.action) for r in checked.plan.resources] == [("terraform_data.doomed", "create")]
        assert "Plan: 1 to add, 0 to change, 0 to destroy." in _texts(checked)
        assert _logged(stack, redis_conn, "drift") == [drift.id]


def test_an_apply_s_output_is_stored_while_it_runs_and_masked(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path)
    slow = "for i in 1 2 3 4 5; do echo line-$i tok-99$i; sleep 1; done"
    resource = f'resource "terraform_data" "slow" {{\n  provisioner "local-exec" {{\n    command = "{slow}"\n  }}\n}}\n'
    with running_stack(tmp_path, redis_url) as stack:
        gh, store = stack.gh, _store(stack, redis_conn)
        repo = gh.create_repo(
            "acme", "infra", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}), ".plangate.yml": CONFIG}
        )
        gh.set_permission(repo, "alice", "write")
        files = {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}) + resource}
        pr = gh.open_pr(repo, "slow", "alice", "Slow", files)
        planned(stack, repo, pr.head_sha)
        merged = gh.merge_pr(pr, merged_by="bob")

        (running,) = _runs(stack, store, repo, merged, "apply", ended=False)

        def early() -> Stored | None:
            """The run's output while it still runs: some of the local-exec's lines, not yet its last."""
            now = store.read(running.id)
            seen = [] if now is None else _texts(now)
            if now is not None and now.head.running and any("line-2" in t for t in seen):
                return now
            assert not any("line-5" in t for t in seen), "the whole output arrived only at the end"
            return None

        during = stack.wait_for("the apply's output while it runs", early, timeout=180, every=0.05)
        assert not any("line-5" in t for t in _texts(during))
        status(stack, repo, merged, "plangate/apply", "success")
        (head,) = _runs(stack, store, repo, merged, "apply")
        assert (head.outcome, head.ok, head.number) == ("applied", True, pr.number)
        stored = store.read(head.id)
        assert stored is not None
        texts = _texts(stored)
        steps = [t.split()[1:3] for t in texts if t.startswith("$ ")]
        assert steps == [[head.tool, "init"], [head.tool, "plan"], [head.tool, "apply"]]
        assert "terraform_data.slow (local-exec): line-5 (sensitive value)" in texts
        assert not any("tok-99" in t for t in texts)
        assert _logged(stack, redis_conn, "apply") == [head.id]


def test_a_long_plan_s_output_is_stored_while_it_runs(tmp_path: Path, redis_url: str, redis_conn: redis.Redis) -> None:
    state = applied_state(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "terraform").write_text(CHATTY_PLAN.format(real=tool()))
    (bin_dir / "terraform").chmod(0o755)
    with running_stack(tmp_path, redis_url, extra_env={"PATH": f"{bin_dir}:{os.environ['PATH']}"}) as stack:
        gh, store = stack.gh, _store(stack, redis_conn)
        repo = gh.create_repo(
            "acme", "infra", {"infra/main.tf": main_tf(state, {"keep": "a", "doomed": "b"}), ".plangate.yml": CONFIG}
        )
        gh.set_permission(repo, "alice", "write")
        pr = gh.open_pr(repo, "slow", "alice", "Slow", {"infra/main.tf": main_tf(state, {"keep": "a2", "doomed": "b"})})
        (running,) = _runs(stack, store, repo, pr.head_sha, "plan", ended=False)

        def early() -> list[str] | None:
            """The plan's lines while it still runs: some of what it prints, not yet its last."""
            now = store.read(running.id)
            seen = [] if now is None else _texts(now)
            if now is not None and now.head.running and any("reading 2" in t for t in seen):
                return seen
            assert not any("reading 5" in t for t in seen), "the whole output arrived only at the end"
            return None

        during = stack.wait_for("the plan's output while it runs", early, timeout=180, every=0.05)
        assert not any("reading 5" in t for t in during) and "reading 1 (sensitive value)" in during
        assert "plangate/plan" not in {n for n, r in gh.reports(repo, pr.head_sha).items() if r.state != "pending"}
        planned(stack, repo, pr.head_sha)
        (head,) = _runs(stack, store, repo, pr.head_sha, "plan")
        stored = store.read(head.id)
        assert stored is not None and head.outcome == "planned"
        texts = _texts(stored)
        assert "reading 5 (sensitive value)" in texts and not any("tok-77" in t for t in texts)
        assert texts.index("reading 1 (sensitive value)") < texts.index("Plan: 0 to add, 1 to change, 0 to destroy.")
