"""The flows' decisions, one step at a time: superseded, nothing to do, report-only, and errors that block.

Each test awaits a flow directly against the in-process stand-in (real Redis, git and terraform, no RQ),
so the decision under test is the only thing that varies; the end-to-end stories cover the wiring.
"""

from __future__ import annotations

import asyncio
import http
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast
from uuid import uuid4

import gidgethub
import pytest
from gidgethub.abc import GitHubAPI

from bot.events.pulls import plan_request
from core import redis_keys
from core.apply_order import holdup
from core.contract import APPLY_CONTEXT, DESTROY_CONTEXT, PLAN_CONTEXT
from core.projects import Project
from core.trigger import Trigger, Why
from plumbing.runlog import recent_runs
from standin.gitops import update_ref
from tests.e2e import BOT
from tests.flows import World, world_at
from tests.tfproject import main_tf, state_addresses
from workers.adapters.github import vcs
from workers.adapters.store import applies as apply_store
from workers.flows import apply_project, commit_tree, pr_plan, pr_publish, push_apply

BASE = {"keep": "a", "doomed": "b"}


@pytest.fixture
def world(tmp_path: Path, redis_url: str) -> Iterator[World]:
    with world_at(tmp_path, redis_url, BASE) as made:
        yield made


def _tf(world: World, resources: dict[str, str]) -> dict[str, str | None]:
    return {"infra/main.tf": main_tf(world.state, resources)}


# -- a pull request's plan --------------------------------------------------------------------------


def test_a_pr_that_touches_no_project_passes_without_a_plan_or_a_comment(world: World) -> None:
    req = world.opened("docs", {"README.md": "words\n"})
    assert world.plan_pr(req) is None
    assert world.reports(req.sha) == {
        PLAN_CONTEXT: ("success", "no Terraform project affected"),
        DESTROY_CONTEXT: ("success", "no destroys"),
    }
    assert world.bot_bodies(req.pr) == []


def test_a_github_failure_during_the_fetch_leaves_no_checkout_behind(world: World) -> None:
    req = world.opened("grow", _tf(world, {**BASE, "one": "1"}))
    world.gh.faults.add("GET", f"/repos/{world.repo.full_name}/pulls/{req.pr}/files", status=404, times=1)
    with pytest.raises(gidgethub.BadRequest):
        world.plan_pr(req)  # git was fetching while GitHub answered: it is waited for, then removed
    time.sleep(0.2)
    jobs = world.ctx.checkouts / str(world.repo.id)  # job directories; the object cache lives beside them
    assert not jobs.exists() or [p for p in jobs.rglob("*") if p.is_file()] == []
    trees = world.ctx.trees / str(world.repo.id)  # with the sandbox: the shared tree, complete or absent
    assert not list(trees.glob("*.staging-*")) and (trees / req.sha / "infra" / "main.tf").is_file()
    assert world.plan_pr(req) is not None  # the job's retry plans as if nothing happened


def test_git_fetches_a_prs_code_before_anything_else_is_done(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    fetching = threading.Event()
    real_fetch, real_take = commit_tree.for_discovery, pr_plan._take_head
    seen: list[bool] = []

    def fetch(*args: Any) -> Path:
        fetching.set()
        return real_fetch(*args)

    def take(*args: Any) -> None:
        seen.append(fetching.wait(5))  # blocks the event loop: only a fetch already started can go on
        real_take(*args)

    monkeypatch.setattr(commit_tree, "for_discovery", fetch)
    monkeypatch.setattr(pr_plan, "_take_head", take)
    req = world.opened("grow", _tf(world, {**BASE, "one": "1"}))
    assert world.plan_pr(req) is not None
    assert seen == [True]  # git was fetching before the SHA was taken and before any GitHub request


def test_the_fetch_is_waited_for_before_a_github_failure_propagates(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fetching(*args: object) -> Path:  # git, still fetching
        time.sleep(0.3)
        return world.ctx.trees

    monkeypatch.setattr(commit_tree, "for_discovery", fetching)
    req = world.opened("x", {"a.tf": ""})

    async def step() -> bool:
        started: list[asyncio.Future[Path]] = []
        with pytest.raises(gidgethub.BadRequest):
            async with pr_plan._fetched(world.ctx, req, req.sha, "token") as files:
                started.append(files)
                raise gidgethub.BadRequest(http.HTTPStatus.NOT_FOUND)
        return started[0].done()

    assert world.run(step())  # the failure comes only once git is done: then its directory may go


def _started_together(monkeypatch: pytest.MonkeyPatch, parties: int, *targets: tuple[Any, str]) -> None:
    """Patch each (module, function): a call goes on only once `parties` calls have started, so calls
    made one at a time time out at the barrier (after 5 s) instead of passing."""
    gate = asyncio.Barrier(parties)

    def together(real: Any) -> Any:
        async def call(*args: Any, **kwargs: Any) -> Any:
            await asyncio.wait_for(gate.wait(), 5)
            return await real(*args, **kwargs)

        return call

    for module, name in targets:
        monkeypatch.setattr(module, name, together(getattr(module, name)))


def test_the_dispatch_asks_github_everything_at_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    # the config read, the pending run, the files and the lookup must all have started before any goes on
    calls = [(pr_plan, "base_config"), (vcs, "set_status"), (vcs, "changed_files"), (pr_plan, "_learn_comments")]
    _started_together(monkeypatch, 4, *calls)
    req = world.opened("grow", _tf(world, {**BASE, "one": "1"}))
    assert world.plan_pr(req) is not None  # one at a time, the first call times out at the barrier


def test_no_plan_is_published_without_the_default_branchs_masks(tmp_path: Path, redis_url: str) -> None:
    masks = {".plangate.yml": "version: 1\nmask_patterns: ['tok-[0-9]+']\n"}
    with world_at(tmp_path, redis_url, BASE, masks) as world:
        req = world.opened("leak", _tf(world, {**BASE, "one": "tok-123"}))
        config = rf"/repos/{world.repo.full_name}/contents/\.plangate\.yml"
        world.gh.faults.add("GET", config, status=403, times=1)  # e.g. the App lost `contents: read` a moment
        with pytest.raises(gidgethub.BadRequest):
            world.plan_pr(req)  # the job fails and is tried again; going on would publish the token
        assert world.bot_bodies(req.pr) == [] and world.reports(req.sha)[PLAN_CONTEXT][0] == "pending"
        planned = world.plan_pr(req)
        assert planned is not None
        world.run(pr_publish.publish(world.ctx, *planned))
        (comment,) = world.bot_bodies(req.pr)
        assert "terraform_data.one" in comment and "tok-123" not in comment


def test_plan_naming_one_project_keeps_the_prs_other_destroys_in_its_gate(world: World) -> None:
    other = {"other/main.tf": main_tf(world.state.parent / "other.tfstate", {"new": "1"})}
    req = world.opened("two", {**_tf(world, {"keep": "a"}), **other})  # infra destroys `doomed`
    first = world.plan_pr(req)
    assert first is not None
    world.run(pr_publish.publish(world.ctx, *first, world.made))
    assert world.reports(req.sha)[DESTROY_CONTEXT][0] == "failure"
    named = world.plan_pr(replace(req, trigger=Trigger(Why.COMMAND, "1"), only=("other",)))  # `/plan other`
    assert named is not None
    world.run(pr_publish.publish(world.ctx, *named, world.made))
    (comment,) = world.bot_bodies(req.pr)
    assert world.reports(req.sha)[DESTROY_CONTEXT][0] == "failure" and "terraform_data.doomed" in comment
    assert "terraform_data.new" in comment and len(world.jobs) == 3  # `other` planned again, infra carried


def test_no_gate_verdict_is_published_from_destroy_rules_github_could_not_serve(world: World) -> None:
    req = world.opened("shrink", _tf(world, {"keep": "a"}))  # destroys `doomed`: the publish reads the rules
    planned = world.plan_pr(req)
    assert planned is not None
    world.gh.faults.add("GET", rf"/repos/{world.repo.full_name}/contents/\.plangate\.yml", status=403, times=1)
    with pytest.raises(gidgethub.BadRequest):
        world.run(pr_publish.publish(world.ctx, *planned))  # tried again by RQ, not judged without the rules
    assert world.reports(req.sha)[PLAN_CONTEXT][0] == "pending" and world.bot_bodies(req.pr) == []
    world.run(pr_publish.publish(world.ctx, *planned))
    assert world.reports(req.sha)[DESTROY_CONTEXT][0] == "failure" and len(world.bot_bodies(req.pr)) == 1


def test_a_plan_whose_dispatch_record_is_gone_is_still_masked(tmp_path: Path, redis_url: str) -> None:
    masks = {".plangate.yml": "version: 1\nmask_patterns: ['tok-[0-9]+']\n"}
    with world_at(tmp_path, redis_url, BASE, masks) as world:
        req = world.opened("leak", _tf(world, {**BASE, "one": "tok-123"}))
        planned = world.plan_pr(req)
        assert planned is not None
        world.ctx.redis.delete(redis_keys.plan_meta(world.repo.id, req.pr, req.sha))  # e.g. Redis lost its last writes
        world.run(pr_publish.publish(world.ctx, *planned))
        (comment,) = world.bot_bodies(req.pr)
        assert "terraform_data.one" in comment and "tok-123" not in comment


def test_a_failed_plans_error_is_masked_in_the_run_log_too(tmp_path: Path, redis_url: str) -> None:
    masks = {".plangate.yml": "version: 1\nmask_patterns: ['tok-[0-9]+']\n"}
    with world_at(tmp_path, redis_url, BASE, masks) as world:
        broken = main_tf(world.state, BASE) + 'variable "tok-123" {}\n'  # no value: plan fails, naming it
        planned = world.plan_pr(world.opened("broken", {"infra/main.tf": broken}))
        assert planned is not None
        world.run(pr_publish.publish(world.ctx, *planned))
        (run,) = recent_runs(world.ctx.redis, 1)  # what the status page lists
        assert run["summary"].startswith("plan failed") and "tok-123" not in run["summary"]


def test_an_invalid_config_on_the_default_branch_stops_every_plan(tmp_path: Path, redis_url: str) -> None:
    broken = {".plangate.yml": "version: 1\nfuture_key: 1\nmask_patterns: ['tok-[0-9]+']\n"}
    with world_at(tmp_path, redis_url, BASE, broken) as world:
        fixed = {".plangate.yml": "version: 1\nmask_patterns: []\n"}  # the PR's own config is valid
        req = world.opened("leak", {**_tf(world, {**BASE, "one": "tok-123"}), **fixed})
        assert world.plan_pr(req) is None  # its masks are unknown: nothing may be shown
        (comment,) = world.bot_bodies(req.pr)
        assert "future_key" in comment and "default branch `main`" in comment and "tok-123" not in comment
        assert world.reports(req.sha)[DESTROY_CONTEXT][0] == "failure"


def test_a_replan_after_main_moved_waits_for_githubs_new_test_merge(world: World) -> None:
    req = world.opened("grow", _tf(world, {**BASE, "one": "1"}))
    docs = world.opened("docs", {"README.md": "words\n"})
    world.gh.state.mergeability_reads = 2  # then GitHub answers `mergeable: null`, naming the old test merge
    world.merged(world.pr(docs.pr))  # main moves: the PR's test merge is made again
    pr = world.pr(req.pr)
    assert pr.merge_commit_sha is not None and pr.previous_merge not in (None, pr.merge_commit_sha)
    dispatched = world.run(pr_plan.dispatch(world.ctx, replace(req, trigger=Trigger(Why.BASE_MOVED, "moved"))))
    assert dispatched is not None and dispatched.request.code_sha == pr.merge_commit_sha  # not the old merge


def test_results_of_a_superseded_sha_are_never_published(world: World) -> None:
    first = world.opened("grow", _tf(world, {**BASE, "one": "1"}))
    planned_first = world.plan_pr(first)
    assert planned_first is not None
    second = world.pushed(world.pr(first.pr), _tf(world, {**BASE, "two": "2"}))
    planned_second = world.plan_pr(second)
    assert planned_second is not None

    world.run(pr_publish.publish(world.ctx, *planned_first))  # the older SHA's publish job runs last
    assert world.bot_bodies(first.pr) == []
    assert world.reports(first.sha)[PLAN_CONTEXT][0] == "pending"

    world.run(pr_publish.publish(world.ctx, *planned_second))
    (comment,) = world.bot_bodies(first.pr)
    assert second.sha[:7] in comment and "terraform_data.two" in comment and "terraform_data.one" not in comment
    assert world.reports(second.sha)[PLAN_CONTEXT][0] == "success"


def test_a_failed_plan_fails_the_plan_and_never_passes_the_destroy_gate(world: World) -> None:
    req = world.opened("broken", {"infra/main.tf": main_tf(world.state, BASE) + 'resource "terraform_data" {\n'})
    planned = world.plan_pr(req)
    assert planned is not None
    _, results = planned
    assert [r.plan for r in results] == [None] and results[0].error
    world.run(pr_publish.publish(world.ctx, *planned))
    assert world.reports(req.sha) == {
        PLAN_CONTEXT: ("failure", "1 of 1 plans failed: infra"),
        DESTROY_CONTEXT: ("failure", "Cannot check destroys: 1 plans failed: infra"),
    }
    (comment,) = world.bot_bodies(req.pr)
    assert "Unclosed configuration block" in comment


def test_a_destroy_in_a_pr_turns_the_gate_red_and_names_it(world: World) -> None:
    req = world.opened("shrink", _tf(world, {"keep": "a"}))
    planned = world.plan_pr(req)
    assert planned is not None
    world.run(pr_publish.publish(world.ctx, *planned))
    state, description = world.reports(req.sha)[DESTROY_CONTEXT]
    assert state == "failure" and "1 to destroy" in description
    (comment,) = world.bot_bodies(req.pr)
    assert "terraform_data.doomed" in comment


def test_publish_reports_both_contexts_together_and_each_keeps_one_run(world: World) -> None:
    req = world.opened("shrink-twice", _tf(world, {"keep": "a"}))
    planned = world.plan_pr(req)
    assert planned is not None
    world.ctx.redis.delete(redis_keys.check_runs(req.repo, req.sha))  # neither run known: both are created at once
    world.run(pr_publish.publish(world.ctx, *planned))
    world.run(pr_publish.publish(world.ctx, *planned))  # a re-run of publish edits both runs in place
    names = [run.name for run in world.gh.all_check_runs(world.repo, req.sha)]
    assert sorted(names) == [DESTROY_CONTEXT, PLAN_CONTEXT, PLAN_CONTEXT]  # the first plan run: dispatch's pending
    assert world.reports(req.sha)[DESTROY_CONTEXT][0] == "failure"


def test_a_report_that_fails_for_good_fails_publish_after_the_other_went_out(world: World) -> None:
    req = world.opened("shrink-refused", _tf(world, {"keep": "a"}))
    planned = world.plan_pr(req)
    assert planned is not None
    world.gh.faults.add("POST", f"/repos/{world.repo.full_name}/check-runs", status=422, times=1)  # the destroy run
    with pytest.raises(gidgethub.BadRequest):
        world.run(pr_publish.publish(world.ctx, *planned))  # RQ then runs the job again
    assert world.reports(req.sha)[PLAN_CONTEXT][0] == "success" and DESTROY_CONTEXT not in world.reports(req.sha)
    world.run(pr_publish.publish(world.ctx, *planned))
    assert world.reports(req.sha)[DESTROY_CONTEXT][0] == "failure"


def test_the_dispatch_finds_the_comments_so_the_first_publish_only_posts(world: World) -> None:
    req = world.opened("first", _tf(world, {**BASE, "one": "1"}))
    comments = f"/repos/{world.repo.full_name}/issues/{req.pr}/comments"
    planned = world.plan_pr(req)  # the dispatch looks for the bot's comments while git fetches
    assert planned is not None and world.gh.state.count_requests("GET", comments) == 1
    world.run(pr_publish.publish(world.ctx, *planned))
    assert world.gh.state.count_requests("GET", comments) == 1 and len(world.bot_bodies(req.pr)) == 1
    again = world.plan_pr(world.pushed(world.pr(req.pr), _tf(world, {**BASE, "two": "2"})))
    assert again is not None and world.gh.state.count_requests("GET", comments) == 1  # known now: no lookup


def _links(world: World, sha: str) -> set[str]:
    """What plangate's reports on `sha` link to (the fragment of each URL)."""
    return {(r.target_url or "").rpartition("#")[2] for r in world.gh.reports(world.repo, sha).values()}


def test_a_pushs_publish_edits_the_comment_and_reports_at_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    first = world.plan_pr(world.opened("grow", _tf(world, {**BASE, "one": "1"})))
    assert first is not None
    world.run(pr_publish.publish(world.ctx, *first))  # a new comment: its URL comes with GitHub's answer

    req = first[0]
    pushed = world.plan_pr(world.pushed(world.pr(req.pr), _tf(world, {**BASE, "two": "2"})))
    assert pushed is not None
    _started_together(monkeypatch, 3, (vcs, "upsert_comments"), (vcs, "set_status"))  # the edit, both reports
    world.run(pr_publish.publish(world.ctx, *pushed))  # one at a time, the edit would time out at the barrier
    (comment,) = world.gh.comments_on(world.repo, req.pr)
    assert "terraform_data.two" in comment.body
    assert _links(world, pushed[0].sha) == {f"issuecomment-{comment.id}"}


def test_a_first_publish_posts_the_comment_and_reports_at_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    first = world.plan_pr(world.opened("grow", _tf(world, {**BASE, "one": "1"})))
    assert first is not None
    req = first[0]
    _started_together(monkeypatch, 3, (vcs, "upsert_comments"), (vcs, "set_status"))  # the post, both reports
    world.run(pr_publish.publish(world.ctx, *first))  # one at a time, the post would time out at the barrier
    (comment,) = world.gh.comments_on(world.repo, req.pr)
    assert "terraform_data.one" in comment.body
    links = {r.target_url for r in world.gh.reports(world.repo, req.sha).values()}
    assert links == {f"{req.clone_url.removesuffix('.git')}/pull/{req.pr}"}  # the PR's page: no comment URL yet


def test_reports_link_to_the_comment_posted_anew_when_the_old_one_was_deleted(world: World) -> None:
    first = world.plan_pr(world.opened("grow", _tf(world, {**BASE, "one": "1"})))
    assert first is not None
    world.run(pr_publish.publish(world.ctx, *first))
    req = first[0]
    (old,) = world.gh.comments_on(world.repo, req.pr)
    world.gh.delete_comment(old, deliver=False)
    pushed = world.plan_pr(world.pushed(world.pr(req.pr), _tf(world, {**BASE, "two": "2"})))
    assert pushed is not None
    world.run(pr_publish.publish(world.ctx, *pushed))  # the edit finds no comment and posts one
    (new,) = world.gh.comments_on(world.repo, req.pr)
    assert new.id != old.id and _links(world, pushed[0].sha) == {f"issuecomment-{new.id}"}


def test_a_publish_that_died_after_posting_edits_that_comment_on_its_next_try(world: World) -> None:
    req = world.opened("crashed", _tf(world, {**BASE, "one": "1"}))
    planned = world.plan_pr(req)
    assert planned is not None
    world.run(pr_publish.publish(world.ctx, *planned))
    key = redis_keys.comments(world.repo.id, req.pr, "plan")
    world.ctx.records.set(key, '{"1": 0}')  # as left by a worker killed between the POST and recording its id
    world.run(pr_publish.publish(world.ctx, *planned))
    (comment,) = world.bot_bodies(req.pr)  # found on GitHub and edited, not posted twice
    assert "terraform_data.one" in comment


def test_finding_the_comments_never_overwrites_what_a_publish_recorded(world: World) -> None:
    req = world.opened("race", _tf(world, {**BASE, "one": "1"}))
    key = redis_keys.comments(world.repo.id, req.pr, "plan")

    class Racing:  # GitHub answers the lookup (no comment yet) after a publish recorded its comment
        async def getiter(self, url: str) -> AsyncIterator[dict[str, object]]:
            world.ctx.records.set(key, '{"1": 77}')
            none: list[dict[str, object]] = []
            for comment in none:
                yield comment

    gh = cast(GitHubAPI, Racing())
    repo = world.repo
    learn = vcs.learn_comments(
        gh, world.ctx.records, repo=repo.full_name, repo_id=repo.id, number=req.pr, login=BOT, kind="plan"
    )
    world.run(learn)
    assert vcs.known_comment(world.ctx.records, world.repo.id, req.pr, "plan") == 77


# -- apply on merge ---------------------------------------------------------------------------------


def _apply_all(
    world: World, pr_number: int, *, lose_outcomes: bool = False
) -> tuple[dict[str, str], push_apply.AppliesToRun | None]:
    push = world.merged(world.pr(pr_number))
    found = world.run(push_apply.dispatch(world.ctx, push))
    if found is None:
        return {}, None
    where = found.where(push)
    outcomes = {p.name: world.run(apply_project.run(world.ctx, push, p, where, uuid4().hex)) for p in found.projects}
    if lose_outcomes:  # as a Redis that restarted between the applies and their finish
        world.ctx.redis.delete(redis_keys.apply_outcomes(world.repo.id, push.after))
    world.run(push_apply.finish(world.ctx, push, where, [], found.projects))
    return outcomes, found


def test_a_merge_that_touches_no_project_applies_nothing(world: World) -> None:
    req = world.opened("docs", {"README.md": "words\n"})
    push = world.merged(world.pr(req.pr))
    assert world.run(push_apply.dispatch(world.ctx, push)) is None
    assert world.reports(push.after) == {APPLY_CONTEXT: ("success", "no Terraform project affected")}
    assert state_addresses(world.state) == {"terraform_data.keep", "terraform_data.doomed"}


def test_a_merge_without_destroys_is_applied(world: World) -> None:
    req = world.opened("grow", _tf(world, {**BASE, "more": "c"}))
    outcomes, _ = _apply_all(world, req.pr)
    assert outcomes == {"infra": "applied"}
    assert state_addresses(world.state) == {"terraform_data.keep", "terraform_data.doomed", "terraform_data.more"}


def test_an_apply_whose_outcome_redis_lost_is_reported_as_unknown_never_as_success(world: World) -> None:
    req = world.opened("grow", _tf(world, {**BASE, "more": "c"}))
    outcomes, found = _apply_all(world, req.pr, lose_outcomes=True)
    push_sha = world.pr(req.pr).merge_commit_sha
    assert outcomes == {"infra": "applied"} and found is not None and push_sha is not None
    state, description = world.reports(push_sha)[APPLY_CONTEXT]
    assert state != "success" and "check the state" in description  # it said "success, nothing to apply"


def test_an_unapproved_destroy_is_held_with_nothing_applied(world: World) -> None:
    req = world.opened("shrink", _tf(world, {"keep": "a", "new": "n"}))
    outcomes, found = _apply_all(world, req.pr)
    assert outcomes == {"infra": "blocked:1"}
    assert state_addresses(world.state) == {"terraform_data.keep", "terraform_data.doomed"}
    assert found is not None
    (held,) = apply_store.blocked_on(world.ctx.records, world.repo.id, req.pr)
    assert held.project == found.projects[0] and held.push.after == world.pr(req.pr).merge_commit_sha
    assert [g.key for g in held.gated] == ["terraform_data.doomed"] and held.gated[0].object
    assert held.is_pr and held.approved_on == world.pr(req.pr).head_sha
    assert any("terraform_data.doomed" in body for body in world.bot_bodies(req.pr))
    assert world.reports(held.push.after)[APPLY_CONTEXT] == ("failure", "blocked: 1 gated change — /approve-destroy")


def test_an_older_push_never_applies_over_a_newer_one(world: World) -> None:
    first = world.opened("one", _tf(world, {**BASE, "one": "1"}))
    older = world.merged(world.pr(first.pr))
    second = world.opened("two", _tf(world, {**BASE, "one": "1", "two": "2"}))
    newer = world.merged(world.pr(second.pr))
    found = world.run(push_apply.dispatch(world.ctx, older))
    assert found is not None
    (project,) = found.projects
    apply_store.set_applied(world.ctx.records, world.repo.id, project.identity, newer.after)

    outcome = world.run(apply_project.run(world.ctx, older, project, found.where(older), "run-older"))
    assert outcome == "not-applied"
    assert state_addresses(world.state) == {"terraform_data.keep", "terraform_data.doomed"}
    assert world.bot_bodies(first.pr) == []


def test_an_older_push_behind_a_newer_held_apply_holds_its_dependents(world: World) -> None:
    """A newer push's apply of the project is held (not applied): the older push's apply steps aside, and
    says so in a way that holds the projects depending on it at the older commit (its changes are in
    neither commit's applied state yet), unlike an apply superseded by a newer one that applied."""
    first = world.opened("one", _tf(world, {**BASE, "one": "1"}))
    older = world.merged(world.pr(first.pr))
    second = world.opened("two", _tf(world, {**BASE, "one": "1", "two": "2"}))
    newer = world.merged(world.pr(second.pr))
    found = world.run(push_apply.dispatch(world.ctx, older))
    assert found is not None
    (project,) = found.projects
    held = apply_store.hold(newer, project, found.where(older), second.pr, True, [])
    apply_store.save_blocked(world.ctx.records, held)

    outcome = world.run(apply_project.run(world.ctx, older, project, found.where(older), "run-older"))
    assert outcome == "superseded"
    assert state_addresses(world.state) == {"terraform_data.keep", "terraform_data.doomed"}
    waits = {"infra": (), "app": ("infra",)}
    found_holdup = holdup("app", waits, push_apply.outcomes(world.ctx, older))
    assert found_holdup is not None and found_holdup.dependency == "infra"


def test_a_report_only_project_is_planned_and_never_applied(tmp_path: Path, redis_url: str) -> None:
    config = "version: 1\nprojects:\n  - name: infra\n    dir: infra\n    apply_on_merge: false\n"
    with world_at(tmp_path, redis_url, BASE, {".plangate.yml": config}) as world:
        req = world.opened("grow", _tf(world, {**BASE, "more": "c"}))
        outcomes, _ = _apply_all(world, req.pr)
        assert outcomes == {"infra": "not-applied"}
        assert state_addresses(world.state) == {"terraform_data.keep", "terraform_data.doomed"}
        (comment,) = world.bot_bodies(req.pr)
        assert "apply_on_merge is false" in comment and "1 to add" in comment


def test_a_plan_that_fails_at_merge_applies_nothing_and_fails_the_apply(world: World) -> None:
    broken = main_tf(world.state, {**BASE, "more": "c"}) + 'resource "terraform_data" {\n'
    req = world.opened("broken", {"infra/main.tf": broken})
    outcomes, _ = _apply_all(world, req.pr)
    assert outcomes == {"infra": "untrusted:0"}  # an untrustworthy plan blocks, and no approval can unblock it
    assert state_addresses(world.state) == {"terraform_data.keep", "terraform_data.doomed"}
    push_sha = world.pr(req.pr).merge_commit_sha
    assert push_sha is not None
    assert world.reports(push_sha)[APPLY_CONTEXT] == ("failure", "blocked: plan cannot be trusted in infra")
    (comment,) = world.bot_bodies(req.pr)
    assert "No approval will unblock it" in comment and "Unclosed configuration block" in comment
    assert apply_store.blocked_on(world.ctx.records, world.repo.id, req.pr) == []  # nothing held to approve


def test_a_project_list_names_what_the_flows_plan(world: World) -> None:
    """The projects the apply flow finds are the ones discovery names: identity includes dir and workspace."""
    req = world.opened("grow", _tf(world, {**BASE, "more": "c"}))
    push = world.merged(world.pr(req.pr))
    found = world.run(push_apply.dispatch(world.ctx, push))
    assert found is not None
    assert found.projects == [Project(name="infra", dir="infra")]
    assert found.where(push).authors == ("alice",)


def test_a_fork_pr_the_default_branch_allows_is_planned_reading_the_config_once(tmp_path: Path, redis_url: str) -> None:
    forks = {".plangate.yml": "version: 1\nallow_fork_prs: true\n"}
    with world_at(tmp_path, redis_url, BASE, forks) as world:
        files = {"infra/main.tf": main_tf(world.state, {**BASE, "one": "1"})}
        world.gh.open_pr(world.repo, "grow", "mallory", "From a fork", files, fork="mallory/infra", deliver=False)
        req = plan_request(world.gh.outbox[-1].payload)
        assert req.fork
        before = len(world.gh.state.requests)
        planned = world.plan_pr(req)
        assert planned is not None and [r.name for r in planned[1]] == ["infra"]
        reads = [r for r in world.gh.state.requests[before:] if r.path.endswith("/contents/.plangate.yml")]
        assert len(reads) == 1


RUNS_CODE = 'resource "terraform_data" "hook" {\n  provisioner "local-exec" {\n    command = "touch {ran}"\n  }\n}\n'


def _with_hook(world: World) -> dict[str, str | None]:
    ran = world.state.parent / "hook-ran"
    return {"infra/main.tf": main_tf(world.state, BASE) + RUNS_CODE.replace("{ran}", str(ran))}


def test_code_that_runs_at_apply_holds_the_merge_like_a_destroy(world: World) -> None:
    req = world.opened("hook", _with_hook(world))
    planned = world.plan_pr(req)
    assert planned is not None
    world.run(pr_publish.publish(world.ctx, *planned, world.made))
    assert world.reports(req.sha)[DESTROY_CONTEXT] == ("failure", "1 runs code at apply — comment /approve-destroy")
    outcomes, _ = _apply_all(world, req.pr)
    assert outcomes == {"infra": "blocked:1"} and not (world.state.parent / "hook-ran").exists()
    (held,) = apply_store.blocked_on(world.ctx.records, world.repo.id, req.pr)
    assert [g.key for g in held.gated] == ["run provisioners of terraform_data.hook"]


def test_the_default_branchs_config_can_turn_the_code_gate_off_for_a_project(tmp_path: Path, redis_url: str) -> None:
    off = "version: 1\nprojects:\n  - name: infra\n    dir: infra\n    gate_code_at_apply: false\n"
    with world_at(tmp_path, redis_url, BASE, extra={".plangate.yml": off}) as world:
        req = world.opened("hook", _with_hook(world))
        planned = world.plan_pr(req)
        assert planned is not None
        world.run(pr_publish.publish(world.ctx, *planned, world.made))
        assert world.reports(req.sha)[DESTROY_CONTEXT] == ("success", "No destroys")
        outcomes, _ = _apply_all(world, req.pr)
        assert outcomes == {"infra": "applied"} and (world.state.parent / "hook-ran").exists()


def test_a_second_pr_at_the_same_commit_cannot_turn_the_first_ones_gate_green(world: World) -> None:
    """Checks belong to a commit: a PR from the same head to a base that already holds its change has
    nothing to plan, and must not pass the first PR's destroys."""
    first = world.opened("drop", _tf(world, {"keep": "a"}))
    planned = world.plan_pr(first)
    assert planned is not None
    world.run(pr_publish.publish(world.ctx, *planned, world.made))
    assert world.reports(first.sha)[DESTROY_CONTEXT][0] == "failure"
    update_ref(world.repo.path, "refs/heads/holds-it", first.sha)
    world.gh.commit(world.repo, "holds-it", {"README.md": "words\n"})
    world.gh.open_pr(world.repo, "drop", "alice", "Same head", base="holds-it", deliver=False)
    second = plan_request(world.gh.outbox[-1].payload)
    assert second.sha == first.sha and world.run(pr_plan.dispatch(world.ctx, second)) is None
    assert world.reports(first.sha)[DESTROY_CONTEXT] == (
        "failure",
        f"#{first.pr} at this commit: destroys not approved there — /approve-destroy",
    )
