"""`depends_on` end to end: net ← cluster ← app applied in that order on merge (each apply's own local-exec
writes when it started and ended), a failed cluster holds app until the fix that applies cluster, and a
cycle is a config error naming it."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import redis

from core import redis_keys
from core.contract import Jobs
from plumbing import settings as settings_module
from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.stack import Stack, running_stack
from standin.state import Repo
from tests.e2e import bot_bodies, comment_and_wait, horse_of, next_second, planned, status
from tests.tfproject import apply_directly, main_tf, state_addresses

pytestmark = pytest.mark.e2e

# Listed dependents first: without the order, the queue would reach app before net.
CONFIG = """version: 1
gate_code_at_apply: false
projects:
  - {name: app, dir: app, depends_on: [cluster]}
  - {name: cluster, dir: cluster, depends_on: [net]}
  - {name: net, dir: net}
"""
CYCLE = CONFIG.replace("- {name: net, dir: net}", "- {name: net, dir: net, depends_on: [app]}")
NAMES = ("net", "cluster", "app")


def _stamp(resource: str, times: Path, name: str, command: str = "", sleep: int = 2) -> str:
    """A resource whose creation writes when it started, waits, does `command`, then writes when it ended."""
    then = f"sleep {sleep} && {command or 'true'}"
    run = f"date +%s.%N > {times}/{name}.start && {then} && date +%s.%N > {times}/{name}.end"
    return (
        f'resource "terraform_data" "{resource}" {{\n  provisioner "local-exec" {{\n    command = "{run}"\n  }}\n}}\n'
    )


def _states(tmp_path: Path) -> dict[str, Path]:
    """Each project's state file, as main was last applied (one resource each, nothing to run)."""
    found = {}
    for name in NAMES:
        found[name] = tmp_path / "state" / f"{name}.tfstate"
        apply_directly(tmp_path / "applied" / name, main_tf(found[name], {"base": name}))
    return found


def _times(times: Path, name: str) -> tuple[float, float]:
    return float((times / f"{name}.start").read_text()), float((times / f"{name}.end").read_text())


def _merge_all(stack: Stack, repo: Repo, branch: str, files: dict[str, str]) -> tuple[int, str]:
    pr = stack.gh.open_pr(repo, branch, "alice", f"Change {branch}", files)
    planned(stack, repo, pr.head_sha)
    return pr.number, stack.gh.merge_pr(pr, merged_by="bob")


def test_projects_apply_in_dependency_order_and_a_failure_holds_its_dependents(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    states = _states(tmp_path)
    times = tmp_path / "state"
    base = {f"{name}/main.tf": main_tf(states[name], {"base": name}) for name in NAMES}
    with running_stack(tmp_path, redis_url, workers=2) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {**base, ".plangate.yml": CONFIG})
        for login in ("alice", "bob"):
            gh.set_permission(repo, login, "write")

        # One PR changes all three: the comment says the order, the merge keeps it.
        one = {f"{n}/main.tf": base[f"{n}/main.tf"] + _stamp("one", times, f"{n}-one") for n in NAMES}
        pr = gh.open_pr(repo, "one", "alice", "Stamp everything", one)
        planned(stack, repo, pr.head_sha)
        assert any("Apply order on merge: net → cluster → app" in b for b in bot_bodies(stack, repo, pr.number))
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success", "applied 3 projects")
        (net_start, net_end), (cluster_start, cluster_end), (app_start, _) = (_times(times, f"{n}-one") for n in NAMES)
        assert net_start < net_end < cluster_start < cluster_end < app_start
        for name in NAMES:
            assert "terraform_data.one" in state_addresses(states[name])

        # cluster's apply fails: net is applied, app is not (not even planned), and says why.
        two = {f"{n}/main.tf": one[f"{n}/main.tf"] + _stamp("two", times, f"{n}-two") for n in NAMES}
        two["cluster/main.tf"] = one["cluster/main.tf"] + _stamp("two", times, "cluster-two", "exit 1")
        number, failed = _merge_all(stack, repo, "two", two)
        status(stack, repo, failed, "plangate/apply", "failure", "apply failed in cluster")
        waiting = stack.wait_for(
            "app's waiting comment",
            lambda: next((b for b in bot_bodies(stack, repo, number) if "plangate:apply-waiting" in b), None),
        )
        assert "waiting on cluster (failed)" in waiting and "(project `app`)" in waiting
        runs = RunStore(Records(redis_conn, settings_module.load(stack.env).private_key or ""))
        ran = {h.project: h for h in runs.siblings(repo.id, failed) if h.kind == "apply"}
        assert {name: ran[name].outcome for name in NAMES} == {
            "net": "applied",
            "cluster": "apply failed",
            "app": "waiting",
        }
        assert "cluster" in ran["app"].summary and ran["cluster"].summary.startswith("Error:")

        def logged() -> dict[str, str | None] | None:
            """The run log's apply entries at that commit, once app's is written too (after its comment)."""
            entries = [json.loads(e) for e in redis_conn.lrange(redis_keys.RUNS, 0, -1)]
            found = {e["project"]: e.get("run") for e in entries if e["kind"] == "apply" and e["sha"] == failed}
            return found if len(found) == len(NAMES) else None

        assert stack.wait_for("the run log's entries", logged) == {name: ran[name].id for name in NAMES}

        # The fix: cluster's script succeeds. Its failed resource is tainted, so the fix replaces it (a
        # destroy, approved as always); once cluster applies, app is applied at the commit it waited at.
        fix = {"cluster/main.tf": one["cluster/main.tf"] + _stamp("two", times, "cluster-two")}
        pr3 = gh.open_pr(repo, "fix", "alice", "Fix cluster", fix)
        planned(stack, repo, pr3.head_sha)
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr3.number, "bob", "/approve-destroy")
        fixed = gh.merge_pr(pr3, merged_by="bob")
        status(stack, repo, fixed, "plangate/apply", "success", "applied 1 project")
        stack.wait_for("app applied after the fix", lambda: "terraform_data.two" in state_addresses(states["app"]))
        assert _times(times, "cluster-two")[1] < _times(times, "app-two")[0]
        status(stack, repo, failed, "plangate/apply", "failure", "apply failed in cluster")  # what happened there

        # A loop in depends_on is a config error naming it, in apply order.
        loop = gh.open_pr(repo, "loop", "alice", "Loop", {".plangate.yml": CYCLE})
        status(stack, repo, loop.head_sha, "plangate/plan", "failure", ".plangate.yml")
        said = stack.wait_for(
            "the config error",
            lambda: next((b for b in bot_bodies(stack, repo, loop.number) if "cycle" in b), None),
        )
        assert "depends_on" in said and "cycle app → net → cluster → app" in said  # from the first listed


PAIR = """version: 1
gate_code_at_apply: false
plan_dependents: true
projects:
  - {name: cluster, dir: cluster, depends_on: [net]}
  - {name: net, dir: net}
"""


def _waiting(stack: Stack, repo: Repo, number: int, text: str) -> str:
    return stack.wait_for(
        f"{text!r} on #{number}",
        lambda: next((b for b in bot_bodies(stack, repo, number) if "plangate:apply-waiting" in b and text in b), None),
    )


def test_a_held_or_killed_dependency_holds_its_dependent_until_it_applies(tmp_path: Path, redis_url: str) -> None:
    """net blocked on a destroy: cluster waits, and /approve-destroy applies net, then cluster. net's worker
    killed mid-apply: cluster waits on a death ("died": whether net applied is unknown), and /plan, which
    runs net again, applies cluster after it."""
    net_state, cluster_state = tmp_path / "state" / "net.tfstate", tmp_path / "state" / "cluster.tfstate"
    apply_directly(tmp_path / "applied" / "net", main_tf(net_state, {"base": "n", "doomed": "d"}))
    apply_directly(tmp_path / "applied" / "cluster", main_tf(cluster_state, {"base": "c"}))
    times = tmp_path / "state"
    net_tf, cluster_tf = main_tf(net_state, {"base": "n", "doomed": "d"}), main_tf(cluster_state, {"base": "c"})
    with running_stack(tmp_path, redis_url, workers=2) as stack:
        gh = stack.gh
        files = {"net/main.tf": net_tf, "cluster/main.tf": cluster_tf, ".plangate.yml": PAIR}
        repo = gh.create_repo("acme", "infra", files)
        for login in ("alice", "bob"):
            gh.set_permission(repo, login, "write")

        net_tf = main_tf(net_state, {"base": "n"})
        cluster_tf += _stamp("one", times, "cluster-one")
        pr = gh.open_pr(repo, "drop", "alice", "Drop doomed", {"net/main.tf": net_tf, "cluster/main.tf": cluster_tf})
        planned(stack, repo, pr.head_sha)
        merged = gh.merge_pr(pr, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "failure", "blocked")
        assert "waiting on net (blocked)" in _waiting(stack, repo, pr.number, "(project `cluster`)")
        assert "terraform_data.one" not in state_addresses(cluster_state)
        next_second()
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        status(stack, repo, merged, "plangate/apply", "success", "applied 2 projects")
        assert "terraform_data.doomed" not in state_addresses(net_state)
        assert "terraform_data.one" in state_addresses(cluster_state)

        net_tf += _stamp("slow", times, "net-slow", sleep=10)
        cluster_tf += _stamp("two", times, "cluster-two")
        pr2 = gh.open_pr(repo, "slow", "alice", "Slow", {"net/main.tf": net_tf, "cluster/main.tf": cluster_tf})
        planned(stack, repo, pr2.head_sha)
        merged2 = gh.merge_pr(pr2, merged_by="bob")
        stack.wait_for("net's apply to start", (times / "net-slow.start").exists)
        horse = horse_of(Jobs.APPLY_PROJECT)  # cluster's job waits for net's: only net's runs
        assert horse is not None and not (times / "net-slow.end").exists()
        os.kill(horse, signal.SIGKILL)
        assert "died" in status(stack, repo, merged2, "plangate/apply", "failure")
        assert "waiting on net (died)" in _waiting(stack, repo, pr2.number, "(project `cluster`)")
        assert not (times / "cluster-two.start").exists()

        gh.comment(repo, pr2.number, "bob", "/plan")
        status(stack, repo, merged2, "plangate/apply", "success", "applied 2 projects")
        assert {"terraform_data.slow"} <= state_addresses(net_state)
        assert "terraform_data.two" in state_addresses(cluster_state)

        # plan_dependents: a change to net alone plans cluster too (a merge applies net alone).
        only = gh.open_pr(repo, "net-only", "alice", "Net", {"net/main.tf": net_tf + 'output "x" {\n  value = 1\n}\n'})
        planned(stack, repo, only.head_sha)
        comment = "\n".join(b for b in bot_bodies(stack, repo, only.number) if "plangate:plan" in b)
        assert "`cluster`" in comment and "`net`" in comment and "Apply order on merge" not in comment


def _destroy_stamp(times: Path, name: str) -> str:
    """A resource whose destruction writes when it started, waits, then writes when it ended."""
    run = f"date +%s.%N > {times}/{name}.start && sleep 2 && date +%s.%N > {times}/{name}.end"
    return (
        'resource "terraform_data" "stamp" {\n  provisioner "local-exec" {\n    when = destroy\n'
        f'    command = "{run}"\n  }}\n}}\n'
    )


def test_deleted_projects_are_destroyed_dependents_first(tmp_path: Path, redis_url: str) -> None:
    """A PR deletes net and cluster (cluster depends on net): cluster is destroyed before net."""
    times = tmp_path / "state"
    files: dict[str, str] = {}
    states = {}
    for name in ("net", "cluster", "keep"):
        states[name] = times / f"{name}.tfstate"
        files[f"{name}/main.tf"] = main_tf(states[name], {"base": name}) + _destroy_stamp(times, f"{name}-gone")
        apply_directly(tmp_path / "applied" / name, files[f"{name}/main.tf"])
    config = CONFIG.replace("{name: app, dir: app, depends_on: [cluster]}", "{name: keep, dir: keep}")
    with running_stack(tmp_path, redis_url, workers=2) as stack:
        gh = stack.gh
        repo = gh.create_repo("acme", "infra", {**files, ".plangate.yml": config})
        for login in ("alice", "bob"):
            gh.set_permission(repo, login, "write")
        only_keep = "version: 1\ngate_code_at_apply: false\nprojects:\n  - {name: keep, dir: keep}\n"
        gone: dict[str, str | None] = {"net/main.tf": None, "cluster/main.tf": None, ".plangate.yml": only_keep}
        pr = gh.open_pr(repo, "gone", "alice", "Remove net and cluster", gone)
        planned(stack, repo, pr.head_sha)
        assert any("Apply order on merge: cluster → net" in b for b in bot_bodies(stack, repo, pr.number))
        assert "Approved by @bob" in comment_and_wait(stack, repo, pr.number, "bob", "/approve-destroy")
        merged = gh.merge_pr(pr, merged_by="bob")
        status(stack, repo, merged, "plangate/apply", "success", "applied 2 projects")
        (cluster_start, cluster_end), (net_start, _) = _times(times, "cluster-gone"), _times(times, "net-gone")
        assert cluster_start < cluster_end < net_start
        assert state_addresses(states["net"]) == set() and state_addresses(states["cluster"]) == set()
        assert "terraform_data.base" in state_addresses(states["keep"])
