"""A PR plan's run pages get the gate's verdict whenever the gate is decided, and GitHub links to them.

Driven as in tests/flows.py (the stand-in on a thread, real Redis, git and terraform). The run records
themselves are opened by the plan jobs (the pipeline's code): here each is opened with RunStore.start
as that code would, under the id it would use (core.runs.run_id of the plan's job and the project).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from core.approvals import Coverage
from core.config import DestroyApprovers, DestroyRule
from core.contract import DESTROY_CONTEXT, PLAN_CONTEXT, CommandRequest, PlanRequest
from core.results import ProjectResult
from core.runs import RunGate, RunHead, run_id
from plumbing.records import Records
from plumbing.run_store import RunStore
from plumbing.runlog import recent_runs
from standin.state import iso
from tests.e2e import BOT
from tests.flows import World, world_at
from tests.keys import rsa_pem
from tests.tfproject import apply_directly, main_tf
from workers.adapters.github.auth import installation_client
from workers.adapters.github.authors import Authors
from workers.adapters.store import gates as gate_store
from workers.flows import commands, pr_publish, run_pages
from workers.flows.apply_approvals import Standing, standing

BASE = {"keep": "a", "doomed": "b"}
PUBLIC = "https://gate.example.org/plangate"
DOOMED = "terraform_data.doomed"


@pytest.fixture
def world(tmp_path: Path, redis_url: str) -> Iterator[World]:
    with world_at(tmp_path, redis_url, BASE) as made:
        yield made


def _public(world: World, url: str | None = PUBLIC) -> None:
    world.ctx = dataclasses.replace(world.ctx, settings=dataclasses.replace(world.ctx.settings, public_url=url))


def _planned(world: World, resources: dict[str, str]) -> tuple[PlanRequest, list[ProjectResult], str]:
    """A PR planned with `resources` on main, its run opened as the plan job opens it; (request, results,
    the run's id)."""
    req = world.opened("change", {"infra/main.tf": main_tf(world.state, resources)})
    planned = world.plan_pr(req)
    assert planned is not None
    request, results = planned
    (result,) = results
    job, _ = world.made[result.identity]
    run = run_id(job, result.identity)
    head = RunHead(run, "plan", world.repo.full_name, world.repo.id, req.sha, result.name, result.dir, "default")
    RunStore(world.ctx.records).start(dataclasses.replace(head, number=req.pr, started=time.time()))
    return request, results, run


def _gate(world: World, run: str) -> RunGate:
    stored = RunStore(world.ctx.records).read(run)
    assert stored is not None and stored.gate is not None
    return stored.gate


def _approve(world: World, req: PlanRequest, login: str) -> str:
    """`/approve-destroy` by `login`, written a second after the plan was published (GitHub's clock
    counts seconds), handled as the command job handles it; the reaction."""
    time.sleep(1.1)
    comment = world.gh.comment(world.repo, req.pr, login, "/approve-destroy", deliver=False)
    assert world.repo.installation_id is not None
    command = CommandRequest(
        installation_id=world.repo.installation_id,
        repo_id=world.repo.id,
        repo=world.repo.full_name,
        clone_url=req.clone_url,
        default_branch="main",
        number=req.pr,
        is_pr=True,
        comment_id=comment.id,
        commenter=login,
        commenter_type="User",
        command="approve-destroy",
        created_at=iso(comment.created_at),
    )
    outcome = world.run(commands.handle(world.ctx, command))
    assert outcome is not None
    return outcome.reaction


def _details(world: World, sha: str) -> dict[str, Any]:
    return {name: r.target_url for name, r in world.gh.reports(world.repo, sha).items()}


def test_a_destroy_waits_on_its_run_page_until_a_writer_approves_it_there(world: World) -> None:
    _public(world)
    req, results, run = _planned(world, {"keep": "a"})
    world.run(pr_publish.publish(world.ctx, req, results, world.made))

    gate = _gate(world, run)
    assert (gate.state, gate.description) == world.reports(req.sha)[DESTROY_CONTEXT]
    (verdict,) = gate.verdicts
    assert (verdict.key, verdict.kind, verdict.state, verdict.approvers) == (DOOMED, "destroy", "waiting", ())
    assert verdict.note == "needs 1 approval"

    url = f"{PUBLIC}/runs/{run}"
    (body,) = world.bot_bodies(req.pr)
    assert f"[run page]({url})" in body
    assert _details(world, req.sha) == {PLAN_CONTEXT: url, DESTROY_CONTEXT: url}
    record = gate_store.load_plan(world.ctx.records, world.repo.id, req.pr, req.sha)
    assert record is not None and record.runs == {results[0].identity: run}
    (entry,) = [e for e in recent_runs(world.ctx.redis) if e.get("kind") == "plan"]
    assert entry["run"] == run

    assert _approve(world, req, "alice") == "-1"  # she opened the PR: refused, and nothing changes
    assert _gate(world, run).verdicts[0].state == "waiting"
    assert _approve(world, req, "bob") == "+1"
    gate = _gate(world, run)
    assert gate.state == "success" and "approved by @bob" in gate.description
    (verdict,) = gate.verdicts
    assert (verdict.key, verdict.state, verdict.approvers) == (DOOMED, "approved", ("bob",))
    assert world.reports(req.sha)[DESTROY_CONTEXT][0] == "success"
    assert _details(world, req.sha) == {PLAN_CONTEXT: url, DESTROY_CONTEXT: url}


def test_without_a_public_url_nothing_links_to_plangate_but_the_run_still_gets_its_gate(world: World) -> None:
    _public(world, None)
    req, results, run = _planned(world, {"keep": "a"})
    world.run(pr_publish.publish(world.ctx, req, results, world.made))
    (body,) = world.bot_bodies(req.pr)
    assert "[run page]" not in body and "/runs/" not in body
    links = _details(world, req.sha)
    assert links[PLAN_CONTEXT] == links[DESTROY_CONTEXT] and "/runs/" not in str(links[PLAN_CONTEXT])
    assert str(links[PLAN_CONTEXT]).startswith(world.ctx.settings.api_url.rsplit("/api", 1)[0])
    assert _gate(world, run).verdicts[0].state == "waiting"
    assert _approve(world, req, "bob") == "+1"
    assert _gate(world, run).verdicts[0].approvers == ("bob",)
    assert "/runs/" not in str(_details(world, req.sha)[DESTROY_CONTEXT])


def test_nothing_gated_leaves_no_verdicts_and_the_no_destroys_words(world: World) -> None:
    _public(world)
    req, results, run = _planned(world, {**BASE, "extra": "c"})
    world.run(pr_publish.publish(world.ctx, req, results, world.made))
    gate = _gate(world, run)
    assert (gate.state, gate.description, gate.verdicts) == ("success", "No destroys", ())


def test_a_plan_published_without_its_jobs_known_writes_no_gate_and_no_link(world: World) -> None:
    _public(world)
    req, results, run = _planned(world, {"keep": "a"})
    world.run(pr_publish.publish(world.ctx, req, results))  # no `made`: which runs these are is unknown
    stored = RunStore(world.ctx.records).read(run)
    assert stored is not None and stored.gate is None
    assert "[run page]" not in world.bot_bodies(req.pr)[0]
    assert "/runs/" not in str(_details(world, req.sha)[DESTROY_CONTEXT])


def test_the_reports_link_the_blocked_project_of_several_else_the_failed_one_else_the_first() -> None:
    made = {"a": ("job-a", "s"), "b": ("job-b", "s"), "c": ("job-c", "s")}
    runs = run_pages.run_ids(made, ["a", "b", "c", "not made"])
    assert runs == {i: run_id(f"job-{i}", i) for i in "abc"}
    order = ["a", "b", "c"]
    blocked = Coverage(frozenset({("a", "x")}), frozenset({("c", "y")}), ["bob"])
    assert run_pages.report_url(PUBLIC, order, runs, blocked, ["b"]) == f"{PUBLIC}/runs/{runs['c']}"
    assert run_pages.report_url(PUBLIC, order, runs, None, ["b"]) == f"{PUBLIC}/runs/{runs['b']}"
    done = Coverage(frozenset({("a", "x")}), frozenset(), ["bob"])
    assert run_pages.report_url(PUBLIC, order, runs, done, []) == f"{PUBLIC}/runs/{runs['a']}"
    assert run_pages.report_url(None, order, runs, blocked, ["b"]) is None
    assert run_pages.report_url(PUBLIC, order, {}, blocked, ["b"]) is None
    assert run_pages.run_ids(None, order) == {}


def test_a_merge_time_apply_run_shows_the_approvals_that_still_stand(world: World) -> None:
    req, results, _ = _planned(world, {"keep": "a"})
    world.run(pr_publish.publish(world.ctx, req, results, world.made))
    assert _approve(world, req, "bob") == "+1"
    identity = results[0].identity
    record = gate_store.load_plan(world.ctx.records, world.repo.id, req.pr, req.sha)
    assert record is not None
    gates = record.gates[identity]
    apply_run = run_id("apply-job", identity)
    head = RunHead(apply_run, "apply", world.repo.full_name, world.repo.id, req.sha, "infra", "infra", "default")
    RunStore(world.ctx.records).start(head)

    async def stands(rules: tuple[DestroyRule, ...] = ()) -> Standing:
        assert world.repo.installation_id is not None
        async with installation_client(world.ctx.tokens, world.repo.installation_id, world.ctx.settings.api_url) as gh:
            return await standing(
                world.ctx.records,
                gh,
                repo=world.repo.full_name,
                repo_id=world.repo.id,
                number=req.pr,
                shas=(req.sha,),
                identity=identity,
                gates=gates,
                bot_login=BOT,
                authors=Authors({"alice": "opened this pull request"}),
                policy=DestroyApprovers(),
                rules=rules,
            )

    run_pages.write_apply_gate(
        world.ctx.records, apply_run, identity, gates, world.run(stands()), ("success", "applied")
    )
    gate = _gate(world, apply_run)
    assert (gate.state, gate.description) == ("success", "applied")
    assert [(v.key, v.state, v.approvers) for v in gate.verdicts] == [(DOOMED, "approved", ("bob",))]
    two = (DestroyRule(("terraform_data.*",), approvals=2),)
    run_pages.write_apply_gate(world.ctx.records, apply_run, identity, gates, world.run(stands(two)), ("failure", "x"))
    (verdict,) = _gate(world, apply_run).verdicts
    assert (verdict.state, verdict.approvers) == ("waiting", ("bob",))
    assert verdict.note == "destroy_rules[0]: needs 1 more approval"
    never = (DestroyRule(("terraform_data.doomed",), never=True),)
    run_pages.write_apply_gate(
        world.ctx.records, apply_run, identity, gates, world.run(stands(never)), ("failure", "x")
    )
    assert _gate(world, apply_run).verdicts[0].state == "never"

    world.gh.set_permission(world.repo, "bob", "read")  # his write access was taken away before the merge
    blocked = ("failure", "blocked: 1 gated change — /approve-destroy")
    run_pages.write_apply_gate(world.ctx.records, apply_run, identity, gates, world.run(stands()), blocked)
    gate = _gate(world, apply_run)
    assert [(v.key, v.state, v.approvers) for v in gate.verdicts] == [(DOOMED, "waiting", ())]


def test_a_redis_error_writing_a_page_is_logged_not_raised(
    redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def down(*_: object) -> None:
        raise redis.ConnectionError("gone")

    monkeypatch.setattr(RunStore, "set_gate", down)
    records = Records(redis_conn, rsa_pem())
    run_pages.write_gates(records, {"a": run_id("j", "a")}, {}, None, ("success", "No destroys"))
    assert '"gate": "not written"' in caplog.text and "ConnectionError" in caplog.text
    monkeypatch.setattr(RunStore, "set_gate", lambda *_: (_ for _ in ()).throw(ValueError("a bug")))
    with pytest.raises(ValueError):  # anything but Redis failing is a bug, and fails the job
        run_pages.write_gates(records, {"a": run_id("j", "a")}, {}, None, ("success", "No destroys"))


def test_of_several_projects_the_reports_link_the_one_still_waiting(tmp_path: Path, redis_url: str) -> None:
    zone_state = tmp_path / "state" / "zone.tfstate"
    zone_state.parent.mkdir(parents=True, exist_ok=True)
    apply_directly(tmp_path / "applied-zone", main_tf(zone_state, BASE))
    with world_at(tmp_path, redis_url, BASE, extra={"zone/main.tf": main_tf(zone_state, BASE)}) as world:
        _public(world)
        files: dict[str, str | None] = {
            "infra/main.tf": main_tf(world.state, {**BASE, "more": "c"}),  # nothing gated
            "zone/main.tf": main_tf(zone_state, {"keep": "a"}),  # destroys its `doomed`
        }
        req = world.opened("both", files)
        planned = world.plan_pr(req)
        assert planned is not None
        request, results = planned
        runs = {r.dir: run_id(world.made[r.identity][0], r.identity) for r in results}
        assert [r.dir for r in results] == ["infra", "zone"]  # the one waiting is not the first
        world.run(pr_publish.publish(world.ctx, request, results, world.made))
        body = world.bot_bodies(req.pr)[0]
        for where, run in runs.items():
            line = next(x for x in body.splitlines() if x.startswith("- ") and f"dir `{where}`" in x)
            assert line.endswith(f"[run page]({PUBLIC}/runs/{run})")
        waiting = f"{PUBLIC}/runs/{runs['zone']}"
        assert _details(world, req.sha) == {PLAN_CONTEXT: waiting, DESTROY_CONTEXT: waiting}
        assert _approve(world, req, "bob") == "+1"
        assert _details(world, req.sha)[DESTROY_CONTEXT] == f"{PUBLIC}/runs/{runs['infra']}"  # none waits: the first


def test_a_failed_plan_is_what_the_reports_link_and_no_other_change_reads_as_judged(
    tmp_path: Path, redis_url: str
) -> None:
    zone_state = tmp_path / "state" / "zone.tfstate"
    zone_state.parent.mkdir(parents=True, exist_ok=True)
    apply_directly(tmp_path / "applied-zone", main_tf(zone_state, BASE))
    with world_at(tmp_path, redis_url, BASE, extra={"zone/main.tf": main_tf(zone_state, BASE)}) as world:
        _public(world)
        files: dict[str, str | None] = {
            "infra/main.tf": main_tf(world.state, {"keep": "a"}),
            "zone/main.tf": 'resource "broken" {\n',
        }
        req = world.opened("both", files)
        planned = world.plan_pr(req)
        assert planned is not None
        request, results = planned
        assert [(r.dir, r.plan is None) for r in results] == [("infra", False), ("zone", True)]
        runs = {r.dir: run_id(world.made[r.identity][0], r.identity) for r in results if r.identity in world.made}
        for r in results:
            head = RunHead(runs[r.dir], "plan", world.repo.full_name, world.repo.id, req.sha, r.name, r.dir, "default")
            RunStore(world.ctx.records).start(head)
        world.run(pr_publish.publish(world.ctx, request, results, world.made))
        failed = f"{PUBLIC}/runs/{runs['zone']}"
        assert _details(world, req.sha) == {PLAN_CONTEXT: failed, DESTROY_CONTEXT: failed}
        infra, zone = _gate(world, runs["infra"]), _gate(world, runs["zone"])
        assert infra.state == zone.state == "failure" and "Cannot check destroys" in infra.description
        assert zone.verdicts == ()
        assert [(v.key, v.state, v.approvers) for v in infra.verdicts] == [(DOOMED, "waiting", ())]
        assert "a plan at this commit failed" in infra.verdicts[0].note
