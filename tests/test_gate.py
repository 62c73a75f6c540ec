"""core.gate: the verdict on a plan and the apply-on-merge decision; every doubt blocks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.gate import Apply, Block, Noop, decide_apply, unreadable, verdict
from core.gated import Gated, destroy_key, destroy_keys, plan_gates
from core.plan import Plan, ResourceChange, parse_plan

PLANS = Path(__file__).parent / "fixtures" / "terraform" / "plans"


def change(address: str, actions: tuple[str, ...], deposed: str | None = None, mode: str = "managed") -> dict[str, Any]:
    entry: dict[str, Any] = {"address": address, "mode": mode, "type": "t", "change": {"actions": list(actions)}}
    if deposed:
        entry["deposed"] = deposed
    return entry


def plan_of(*changes: dict[str, Any], **top: Any) -> Plan:
    return parse_plan(json.dumps({"format_version": "1.2", "resource_changes": list(changes), **top}))


def rc(address: str, deposed: str | None = None) -> ResourceChange:
    return ResourceChange(address, "managed", "t", ("delete",), "delete", deposed=deposed)


def test_destroy_key() -> None:
    assert destroy_key(rc('module.x.aws_s3_bucket.y["k"]')) == 'module.x.aws_s3_bucket.y["k"]'
    assert destroy_key(rc("aws_instance.a", deposed="abc123")) == "aws_instance.a (deposed abc123)"


def test_destroy_keys_are_unique_and_ordered() -> None:
    plan = plan_of(
        change("b.b", ("delete",)),
        change("a.a", ("delete", "create")),
        change("a.a", ("delete",), deposed="d1"),
        change("c.c", ("create",)),
    )
    assert destroy_keys(plan) == ("b.b", "a.a", "a.a (deposed d1)")


VERDICTS = [
    ((), {}, "apply", 0),
    ((change("a.a", ("create",)), change("b.b", ("update",))), {}, "apply", 0),
    ((change("a.a", ("forget",)), change("d.d", ("delete",), mode="data")), {}, "apply", 0),
    ((change("a.a", ("delete",)),), {}, "blocked", 1),
    ((change("a.a", ("create", "delete")), change("a.a", ("delete",), "dep")), {}, "blocked", 2),
    ((change("a.a", ("teleport",)),), {}, "error", 1),
    ((change("a.a", ("delete", "explode")), change("b.b", ("delete",))), {}, "error", 2),
    ((change("a.a", ("create",)),), {"errored": True, "applyable": False}, "error", 0),
    ((change("a.a", ("delete",)),), {"errored": True}, "error", 1),
    ((change("a.a", ("create",)),), {"applyable": False, "errored": False}, "error", 0),
    ((), {"applyable": False, "errored": False}, "apply", 0),
]


@pytest.mark.parametrize(("changes", "top", "kind", "n_destroys"), VERDICTS)
def test_verdict(changes: tuple[dict[str, Any], ...], top: dict[str, Any], kind: str, n_destroys: int) -> None:
    result = verdict(plan_of(*changes, **top))
    assert result.kind == kind
    assert len(result.destroys) == n_destroys
    assert result.reasons and all(isinstance(r, str) and r for r in result.reasons)


def test_verdict_reasons_name_the_problem() -> None:
    assert "errors while planning" in verdict(plan_of(errored=True)).reasons[0]
    unknown = verdict(plan_of(change("a.a", ("teleport",))))
    assert '["teleport"]' in unknown.reasons[0]
    assert "1 to destroy" in verdict(plan_of(change("a.a", ("delete",)))).reasons[0]


def test_decide_apply_without_destroys() -> None:
    assert decide_apply(plan_of(change("a.a", ("create",))), frozenset()) == Apply(())


def test_decide_apply_needs_every_destroy_key() -> None:
    plan = plan_of(change("a.a", ("delete",)), change("b.b", ("delete", "create")), change("b.b", ("delete",), "d1"))
    blocked = decide_apply(plan, frozenset({"a.a", "b.b"}))
    assert isinstance(blocked, Block)
    assert blocked.unapproved == ("b.b (deposed d1)",)
    assert blocked.error is False
    assert "1 of 3" in blocked.reasons[0]
    approved = frozenset({"a.a", "b.b", "b.b (deposed d1)", "unrelated.x"})
    assert decide_apply(plan, approved) == Apply(("a.a", "b.b", "b.b (deposed d1)"))


def test_decide_apply_approving_the_address_does_not_approve_its_deposed_object() -> None:
    plan = plan_of(change("a.a", ("delete",), "d1"))
    assert decide_apply(plan, frozenset({"a.a"})) == Block(("1 of 1 to destroy not approved",), ("a.a (deposed d1)",))


@pytest.mark.parametrize(
    "plan",
    [
        plan_of(change("a.a", ("create",)), errored=True),
        plan_of(change("a.a", ("delete",)), errored=True, applyable=False),
        plan_of(change("a.a", ("teleport",))),
        plan_of(change("a.a", ("create",)), applyable=False, errored=False),
    ],
)
def test_decide_apply_untrusted_plan_blocks_even_when_approved(plan: Plan) -> None:
    approved = frozenset(destroy_keys(plan))
    decision = decide_apply(plan, approved)
    assert isinstance(decision, Block)
    assert decision.error is True
    assert decision.reasons


def test_decide_apply_unknown_action_lists_it_as_unapproved() -> None:
    decision = decide_apply(plan_of(change("a.a", ("teleport",))), frozenset())
    assert isinstance(decision, Block) and decision.unapproved == ("a.a",)


@pytest.mark.parametrize(
    "plan",
    [
        plan_of(applyable=False, errored=False),
        plan_of(change("a.a", ("no-op",)), change("d.d", ("read",), mode="data")),
        parse_plan((PLANS / "checkov/no_changes_tf1.10.plan.json").read_bytes()),
    ],
)
def test_decide_apply_nothing_to_do_is_noop(plan: Plan) -> None:
    assert isinstance(decide_apply(plan, frozenset()), Noop)


def test_decide_apply_honours_terraforms_applyable() -> None:
    """A move-only plan has no counts but Terraform says it is applyable (the state changes)."""
    moved = {**change("b.b", ("no-op",)), "previous_address": "a.a"}
    assert decide_apply(plan_of(moved, applyable=True, errored=False), frozenset()) == Apply(())
    assert decide_apply(plan_of(moved), frozenset()) == Apply(())


def test_unreadable() -> None:
    block = unreadable("not valid JSON")
    assert block.error is True and block.unapproved == () and "not valid JSON" in block.reasons[0]


ACTIONS = st.sampled_from(
    [
        ("create",),
        ("update",),
        ("delete",),
        ("delete", "create"),
        ("create", "delete"),
        ("forget",),
        ("no-op",),
        ("read",),
        ("boom",),
    ]
)
ADDRESSES = st.sampled_from(["a.a", "b.b", 'c.c["k"]', "module.m.d.d[0]"])
CHANGES = st.lists(st.tuples(ADDRESSES, ACTIONS, st.sampled_from([None, "d1", "d2"])), max_size=6)


@given(
    changes=CHANGES,
    approved=st.frozensets(st.sampled_from(["a.a", "b.b", 'c.c["k"]', "a.a (deposed d1)", "x"])),
    errored=st.booleans(),
    applyable=st.sampled_from([True, False, None]),
)
def test_never_apply_with_an_unapproved_destroy(
    changes: list[tuple[str, tuple[str, ...], str | None]],
    approved: frozenset[str],
    errored: bool,
    applyable: bool | None,
) -> None:
    top: dict[str, Any] = {"errored": errored}
    if applyable is not None:
        top["applyable"] = applyable
    plan = plan_of(*(change(a, acts, dep) for a, acts, dep in changes), **top)
    decision = decide_apply(plan, approved)
    keys = {destroy_key(c) for c in plan.destroys}
    if isinstance(decision, Apply):
        assert keys <= approved
        assert set(decision.approved) == keys
        assert not errored and not plan.unknown_actions
    if isinstance(decision, Block):
        assert set(decision.unapproved) == keys - approved
    if isinstance(decision, Noop):
        assert not keys and not errored
    if verdict(plan).kind == "apply":
        assert not isinstance(decision, Block)


def test_decide_apply_gates_code_that_runs_at_apply_like_a_destroy() -> None:
    plan = plan_of(change("a.a", ("delete",)), change("r.r", ("create",)))
    gates = {**plan_gates(plan), "run local-exec of r.r": Gated("run local-exec of r.r", "o")}
    blocked = decide_apply(plan, frozenset({"a.a"}), gates)
    assert isinstance(blocked, Block) and blocked.unapproved == ("run local-exec of r.r",)
    assert blocked.reasons == ("0 of 1 to destroy and 1 of 1 that run code at apply not approved",)
    assert decide_apply(plan, frozenset({"a.a", "run local-exec of r.r"}), gates) == Apply(tuple(gates))


def test_decide_apply_never_applies_on_gates_missing_a_destroy_of_the_plan() -> None:
    """Gates of another plan (a caller's mistake) cannot stand in for this plan's destroys."""
    plan = plan_of(change("a.a", ("delete",)), change("b.b", ("delete",)))
    decision = decide_apply(plan, frozenset({"a.a"}), {"a.a": Gated("a.a", "o")})
    assert isinstance(decision, Block) and decision.error
