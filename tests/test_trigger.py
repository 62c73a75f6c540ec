"""Triggers: each reason to plan has a job id part of its own, and only a person's request plans afresh."""

from __future__ import annotations

from core.contract import GroupRequest, PlanRequest, job_id
from core.trigger import PUSHED, Trigger, Why


def test_each_reason_names_its_plan_job() -> None:
    assert str(PUSHED) == "push"
    assert str(Trigger(Why.COMMAND, "42")) == "comment-42"
    assert str(Trigger(Why.BASE_MOVED, "abc")) == "main-abc"
    assert len({str(Trigger(why, "x")) for why in Why}) == len(Why)


def test_only_a_person_asks_for_fresh_plans() -> None:
    assert {why for why in Why if Trigger(why).asked_by_a_person} == {Why.COMMAND, Why.RERUN}


def test_a_merge_group_and_a_test_merge_are_named_by_their_trigger() -> None:
    group = GroupRequest(1, 2, "o/r", "https://x/o/r.git", "main", head_sha="s", head_ref="gh-readonly-queue/main/pr-1")
    plan = group.as_plan()
    assert plan.is_merge_group and not plan.plans_test_merge and plan.pr == 0
    moved = PlanRequest(
        1, 2, "o/r", "https://x/o/r.git", "main", pr=3, sha="s", author="a", trigger=Trigger(Why.BASE_MOVED, "b")
    )
    assert moved.plans_test_merge and not moved.is_merge_group


def test_a_job_id_holds_only_what_rq_takes() -> None:
    """RQ cuts an id at a `:` and its worker then drops the job unseen: a timestamp or a ref is made safe."""
    assert job_id("closed", 1, 2, "2024-05-01T12:34:56Z") == "closed-1-2-2024-05-01T12_34_56Z"
    assert job_id("plan", 1, 2, "abc", Trigger(Why.MERGE_GROUP, "gh-readonly-queue/main/pr-1")) == (
        "plan-1-2-abc-merge-group-gh-readonly-queue_main_pr-1"
    )
    assert job_id("plan", 1, 2, "abc", Trigger(Why.COMMAND, "42")) == "plan-1-2-abc-comment-42"
