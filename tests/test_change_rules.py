"""core.change_rules: creates, updates and reads gated by change rules, limits past which a plan is gated,
and how approvals are weighed against both (core.destroy_rules, core.gate, core.gated)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from core.approvals import Approval, approval_for
from core.change_rules import MAX_DESTROYS, MAX_PROJECTS, change_gates, limit_gate, project_gates, with_limits
from core.config import ChangeLimits, ChangeRule, DestroyRule, RepoConfig
from core.destroy_rules import data_type, explain, label, matches, needs, rule_coverage
from core.gate import Apply, Block, decide_apply
from core.gated import Gated, counts, from_plain, kind_of, to_plain
from core.plan import Plan, parse_plan
from core.render.apply import render_blocked
from core.render.destroys import changes_section
from core.render.items import gated_item, gated_phrase
from core.render.replies import approval_status, render_approved

SHA = "a" * 40
P, Q = "infra@default:infra", "net@default:net"
UPDATES = ChangeRule(match=("type:terraform_data",), actions=("update",))


def plan_of(*changes: dict[str, Any]) -> Plan:
    return parse_plan(json.dumps({"format_version": "1.2", "resource_changes": list(changes)}))


def change(
    address: str, actions: list[str], before: object = None, after: object = None, **extra: Any
) -> dict[str, Any]:
    mode = "data" if address.startswith("data.") else "managed"
    return {
        "address": address,
        "mode": mode,
        "type": address.split(".")[1 if mode == "data" else 0],
        "provider_name": "terraform.io/builtin/terraform",
        "change": {"actions": actions, "before": before, "after": after, **extra.pop("change", {})},
        **extra,
    }


def _approve(login: str, gates: dict[str, dict[str, Gated]]) -> Approval:
    approval = approval_for(gates, SHA, login)
    assert isinstance(approval, Approval)
    return approval


def test_keys_name_their_kind_and_no_address_is_mistaken_for_another_kind() -> None:
    assert kind_of("update terraform_data.x") == "change" and kind_of("read data.http.x") == "change"
    assert kind_of("limit max_destroys") == "limit" and kind_of("run local-exec of x") == "code"
    for address in (
        "terraform_data.x",
        'module.m["update x"].a.b',
        "update.x",
        "read.y",
        "terraform_data.x (deposed 0a)",
    ):
        assert kind_of(address) == "destroy"  # a key with no known prefix is a destroy: fails closed


def test_only_the_actions_a_rule_names_are_gated() -> None:
    plan = plan_of(
        change("terraform_data.a", ["update"], {"input": "1"}, {"input": "2"}),
        change("terraform_data.b", ["create"], None, {"input": "3"}),
        change("terraform_data.c", ["no-op"], {"input": "4"}, {"input": "4"}),
        change("null_resource.d", ["update"], {"x": "1"}, {"x": "2"}),
        change("terraform_data.e", ["delete"], {"input": "5"}),
    )
    gates = change_gates(plan, (UPDATES,))
    assert list(gates) == ["update terraform_data.a"]
    assert gates["update terraform_data.a"].action == "update" and gates["update terraform_data.a"].kind == "change"
    both = change_gates(plan, (ChangeRule(match=("terraform_data.*",), actions=("update", "create")),))
    assert list(both) == ["update terraform_data.a", "create terraform_data.b"]
    assert change_gates(plan, ()) == {} and change_gates(plan, (DestroyRule(match=("*",)),)) == {}
    full = project_gates(plan, rules=(UPDATES,))
    assert list(full) == ["terraform_data.e", "update terraform_data.a"]  # destroys stay gated, rules or not


def test_reads_match_data_sources_by_type_and_address() -> None:
    plan = plan_of(change("data.http.ip", ["read"], None, {"url": "u"}))
    assert data_type('module.m["k"].data.http.ip') == "http" and data_type("http.ip") is None
    assert list(change_gates(plan, (ChangeRule(match=("type:http",), actions=("read",)),))) == ["read data.http.ip"]
    assert list(change_gates(plan, (ChangeRule(match=("data.*",), actions=("read",)),))) == ["read data.http.ip"]
    assert change_gates(plan, (ChangeRule(match=("type:http",), actions=("update",)),)) == {}


def test_a_renamed_resource_is_matched_by_its_old_name_too() -> None:
    plan = plan_of(change("terraform_data.new", ["update"], {"i": 1}, {"i": 2}, previous_address="terraform_data.old"))
    assert list(change_gates(plan, (ChangeRule(match=("terraform_data.old",), actions=("update",)),))) == [
        "update terraform_data.new"
    ]


def test_what_an_update_does_is_what_its_approval_is_bound_to() -> None:
    def digest(after: object, **extra: Any) -> str:
        plan = plan_of(change("terraform_data.a", ["update"], {"input": "1"}, after, **extra))
        return change_gates(plan, (UPDATES,))["update terraform_data.a"].object

    base = digest({"input": "2"})
    assert base == digest({"input": "2"}) and len(base) == 32
    assert base != digest({"input": "3"})  # a re-plan that changes what the update does voids the approval
    secret = {"change": {"after_sensitive": {"input": True}}}
    assert digest({"input": "s1"}, **secret) == digest({"input": "s2"}, **secret)  # no guess can be tested
    assert digest({"input": "s1"}, **secret) != digest({"input": "s1"})  # what is hidden is part of it
    unknown = {"change": {"after_unknown": {"input": True}}}
    assert digest({}, **unknown) != digest({})


def test_change_and_destroy_rules_both_apply_and_actions_select() -> None:
    rules = (
        DestroyRule(match=("terraform_data.*",), approvals=2),
        ChangeRule(match=("terraform_data.db",), actions=("replace",), approvals=3),
        ChangeRule(match=("terraform_data.*",), actions=("update",), users=("sre",)),
        ChangeRule(match=("terraform_data.vault",), actions=("delete",), never=True),
    )
    replaced = Gated("terraform_data.db", "o", action="replace")
    deleted = Gated("terraform_data.db", "o", action="delete")
    updated = Gated("update terraform_data.db", "o", action="update")
    assert [matches(r, replaced) for r in rules] == [True, True, True, False]  # a replace is an update too
    assert [matches(r, deleted) for r in rules] == [True, False, False, False]
    assert [matches(r, updated) for r in rules] == [False, False, True, False]
    unknown = Gated("terraform_data.db", "o")  # an older record, or an unknown action: any destroy action
    assert [matches(r, unknown) for r in rules] == [True, True, True, False]
    assert not any(matches(r, Gated("run x", "o")) for r in rules)
    assert label(rules, 2) == "change_rules[1]" and label(rules, 0) == "destroy_rules[0]"
    gates = {P: {"terraform_data.db": replaced, updated.key: updated}}
    people = [Approval(who, SHA, frozenset({(P, "terraform_data.db", "o"), (P, updated.key, "o")})) for who in "abc"]
    found = {n.pair[1]: n for n in needs(gates, people[:2], rules, {})}
    assert found["terraform_data.db"].missing == 1  # destroy rule met, change rule needs a third
    assert found[updated.key].missing == 1  # narrowed to sre: a and b do not count
    assert explain(found[updated.key], rules) == "change_rules[1]: needs 1 more approval"
    done = {
        n.pair[1]: n
        for n in needs(gates, [*people, Approval("sre", SHA, people[0].seen)], rules, {"sre": frozenset({2})})
    }
    assert all(n.satisfied for n in done.values())
    vault = {P: {"terraform_data.vault": Gated("terraform_data.vault", "o", action="delete")}}
    (never,) = needs(vault, [Approval("a", SHA, frozenset({(P, "terraform_data.vault", "o")}))], rules, {})
    assert never.never and "change_rules[2]: never" in explain(never, rules)


def _destroys(*addresses: str) -> dict[str, Gated]:
    return {a: Gated(a, f"obj-{a}", action="delete") for a in addresses}


def test_max_destroys_counts_every_project_and_gates_each_that_counts() -> None:
    limits = ChangeLimits(max_destroys=1)
    gates = {P: _destroys("terraform_data.a"), Q: _destroys("terraform_data.b"), "x@default:x": {}}
    out = with_limits(gates, [P, Q], limits)
    assert MAX_DESTROYS in out[P] and MAX_DESTROYS in out[Q] and not out["x@default:x"]
    assert out[P][MAX_DESTROYS].what == "2 to destroy in 2 projects, over max_destroys: 1"
    assert with_limits({P: _destroys("terraform_data.a")}, [P], limits) == {P: _destroys("terraform_data.a")}
    assert with_limits(gates, [P, Q], None) == gates
    assert gates[P] == _destroys("terraform_data.a")  # the input is left as it was
    other = with_limits({P: _destroys("terraform_data.a"), Q: _destroys("terraform_data.c")}, [P, Q], limits)
    assert other[P][MAX_DESTROYS].object == out[P][MAX_DESTROYS].object  # P contributed the same
    assert other[Q][MAX_DESTROYS].object != out[Q][MAX_DESTROYS].object  # Q did not: its approval is void
    moved = {P: {"terraform_data.a": Gated("terraform_data.a", "another object")}, Q: gates[Q]}
    assert with_limits(moved, [P, Q], limits)[P][MAX_DESTROYS].object != out[P][MAX_DESTROYS].object
    assert MAX_DESTROYS in with_limits({P: _destroys("a.a")}, [P], ChangeLimits(max_destroys=0))[P]


def test_changes_and_code_do_not_count_as_destroys() -> None:
    gates = {P: {"update terraform_data.a": Gated("update terraform_data.a", "o"), "run x": Gated("run x", "o")}}
    assert with_limits(gates, [P], ChangeLimits(max_destroys=0)) == gates


def test_max_projects_counts_projects_with_changes() -> None:
    limits = ChangeLimits(max_projects=1)
    out = with_limits({P: {}, Q: {}, "x@default:x": {}}, [P, Q], limits)
    assert MAX_PROJECTS in out[P] and MAX_PROJECTS in out[Q] and MAX_PROJECTS not in out["x@default:x"]
    assert out[P][MAX_PROJECTS].what == "2 projects with changes, over max_projects: 1"
    assert out[P][MAX_PROJECTS].object != out[Q][MAX_PROJECTS].object
    assert with_limits({P: {}, Q: {}}, [P], limits) == {P: {}, Q: {}}
    assert with_limits({P: {}}, [P, P, "unplanned"], limits) == {P: {}}


@given(st.integers(0, 5), st.lists(st.integers(0, 4), min_size=1, max_size=4))
def test_a_plan_is_gated_by_max_destroys_exactly_when_past_it(limit: int, sizes: list[int]) -> None:
    gates = {f"p{i}@default:p{i}": _destroys(*(f"t.d{i}_{j}" for j in range(n))) for i, n in enumerate(sizes)}
    out = with_limits(gates, list(gates), ChangeLimits(max_destroys=limit))
    gated = {p for p, keys in out.items() if MAX_DESTROYS in keys}
    assert gated == ({p for p, keys in gates.items() if keys} if sum(sizes) > limit else set())


def test_a_limit_needs_its_own_approvals_from_its_approvers() -> None:
    policy = RepoConfig(change_limits=ChangeLimits(max_destroys=1, approvals=2, users=("lead", "cto")))
    gates = with_limits({P: _destroys("t.a", "t.b")}, [P], policy.change_limits)
    first = _approve("bob", gates)
    cov = rule_coverage(gates, [first], sha=SHA, rules=policy.rules, eligible={"bob": frozenset()})
    assert cov.approved_pairs == {(P, "t.a"), (P, "t.b")}  # one approval covers both destroys...
    assert cov.unapproved_pairs == {(P, MAX_DESTROYS)}  # ...but the plan stays gated on the limit
    assert cov.notes[(P, MAX_DESTROYS)] == "change_limits: needs 2 more approvals"
    both = [first, _approve("lead", gates), _approve("cto", gates)]
    eligible = {"bob": frozenset(), "lead": frozenset({0}), "cto": frozenset({0})}
    assert rule_coverage(gates, both, sha=SHA, rules=policy.rules, eligible=eligible).complete


def test_the_gate_blocks_until_every_kind_is_approved() -> None:
    plan = plan_of(
        change("terraform_data.a", ["update"], {"input": "1"}, {"input": "2"}),
        change("terraform_data.b", ["delete"], {"input": "x"}),
        change("terraform_data.c", ["delete"], {"input": "y"}),
    )
    judged = project_gates(plan, rules=(UPDATES,))
    gates = with_limits({P: judged}, [P], ChangeLimits(max_destroys=1))[P]
    assert counts(gates) == {"destroy": 2, "change": 1, "limit": 1, "code": 0}
    blocked = decide_apply(plan, frozenset({"terraform_data.b", "terraform_data.c"}), gates)
    assert isinstance(blocked, Block) and not blocked.error
    assert blocked.unapproved == ("update terraform_data.a", MAX_DESTROYS)
    assert blocked.reasons == (
        "0 of 2 to destroy and 1 of 1 gated changes (change_rules) and 1 of 1 limits passed (change_limits)"
        " not approved",
    )
    assert isinstance(decide_apply(plan, frozenset(gates), gates), Apply)


def test_records_keep_the_action_and_older_ones_read_without_it() -> None:
    gates = {"update t.a": Gated("update t.a", "o", action="update"), "t.b": Gated("t.b", "p", action="replace")}
    assert from_plain(json.loads(json.dumps(to_plain(gates)))) == gates
    assert from_plain({"t.b": ["p", None, None]}) == {"t.b": Gated("t.b", "p")}


def test_a_limit_gated_from_the_prs_record_is_bound_as_the_pr_bound_it() -> None:
    limits = ChangeLimits(max_destroys=1, max_projects=1)
    gates = {P: _destroys("t.a"), Q: _destroys("t.b")}
    published = with_limits(gates, [P, Q], limits)
    alone = limit_gate(MAX_DESTROYS, limits, P, gates[P], "from the record")
    assert alone is not None and alone.object == published[P][MAX_DESTROYS].object and alone.what == "from the record"
    projects = limit_gate(MAX_PROJECTS, limits, P, {}, "w")
    assert projects is not None and projects.object == published[P][MAX_PROJECTS].object
    assert limit_gate(MAX_DESTROYS, limits, P, {}, "w") is None  # no destroy here counts any more
    assert limit_gate("limit max_other", limits, P, gates[P], "w") is None
    assert limit_gate(MAX_PROJECTS, ChangeLimits(max_destroys=1), P, gates[P], "w") is None


def test_the_plan_comment_lists_gated_changes_and_limits_under_their_own_heading() -> None:
    gates = {
        P: {
            "t.a": Gated("t.a", "o", action="delete"),
            "update t.b": Gated("update t.b", "o", action="update"),
            MAX_DESTROYS: Gated(MAX_DESTROYS, "o", what="2 to destroy in 1 project, over max_destroys: 1"),
        },
        Q: {},
    }
    notes = {(P, "update t.b"): "change_rules[0]: needs 1 more approval"}
    text = changes_section(gates, str, 10_000, notes)
    assert "**Gated changes (change_rules)** (1):" in text and "**Limits passed (change_limits)** (1):" in text
    assert "> - `update t.b` · `infra` · *change_rules[0]: needs 1 more approval*" in text
    assert "> - 2 to destroy in 1 project, over max_destroys: 1 · `infra`" in text
    assert "t.a" not in text.replace("update t.b", "")  # destroys have their own section
    assert changes_section({P: {"t.a": Gated("t.a", "o")}, Q: {}}, str, 10_000) == ""
    assert "SECRET" not in changes_section({P: {"update SECRET.x": Gated("update SECRET.x", "o")}}, mask, 10_000)


def mask(text: str) -> str:
    return text.replace("SECRET", "***")


def test_replies_and_statuses_say_what_was_approved_by_kind() -> None:
    keys = ["t.a", "t.b", "update t.c", "create t.d", MAX_DESTROYS, "run x"]
    assert gated_phrase(keys) == (
        "2 destroys, 2 gated changes (change_rules), 1 passed limit (change_limits)"
        " and 1 change that runs code at apply"
    )
    assert gated_phrase(["update t.c"]) == "1 gated change (change_rules)" and gated_phrase(["t.a"]) == "1 destroy"
    assert gated_item("update t.c") == "- update `t.c`" and gated_item(MAX_PROJECTS) == "- limit `max_projects`"
    assert gated_item("t.a (deposed 0a)") == "- `t.a` (deposed object `0a`)"
    gates = {P: {k: Gated(k, "o") for k in keys}}
    approval = _approve("bob", gates)
    reply = render_approved(
        approval, rule_coverage(gates, [approval], sha=SHA, rules=(), eligible={}), marker="<!-- m -->"
    )
    assert "Approved by @bob: 2 destroys, 2 gated changes (change_rules)" in reply
    assert "- update `t.c`" in reply and "- limit `max_destroys`" in reply
    assert "Every gated change at aaaaaaa is now approved" in reply
    open_cov = rule_coverage(gates, [], sha=SHA, rules=(), eligible={})
    assert approval_status(open_cov) == (
        "failure",
        "2 to destroy, 2 gated changes, 1 limit passed, 1 runs code at apply — comment /approve-destroy",
    )


def test_a_blocked_apply_names_gated_changes_and_limits() -> None:
    gates = {
        "update t.b": Gated("update t.b", "o", action="update"),
        MAX_DESTROYS: Gated(MAX_DESTROYS, "o", what="3 to destroy in 2 projects, over max_destroys: 1"),
    }
    block = Block(("not approved",), tuple(gates))
    body = render_blocked(
        project="infra", dir="infra", sha=SHA, block=block, plan=None, plan_text="", pr=7, approved_on=None, gates=gates
    )
    assert "1 gated change (change_rules) and 1 limit passed (change_limits) — not approved" in body
    assert "Gated changes (change_rules), not approved (1):\n- `update t.b`" in body
    assert (
        "Limits passed (change_limits), not approved (1):\n- 3 to destroy in 2 projects, over max_destroys: 1" in body
    )
    assert "Not approved (" not in body  # no destroy is listed as one


ADDRESSES = st.sampled_from(
    ["terraform_data.a", 'module.m["k"].terraform_data.b[0]', "aws_db_instance.main", "module.prod.aws_s3_bucket.x"]
)
PATTERNS = st.sampled_from(["terraform_data.*", "type:terraform_data", "module.*", "aws_db_instance.main", "*.x"])


@given(ADDRESSES, st.sampled_from(["delete", "replace", ""]), st.lists(PATTERNS, min_size=1, max_size=3))
def test_a_destroy_rule_is_the_change_rule_of_its_default_actions(address: str, action: str, match: list[str]) -> None:
    destroy_rule, change_rule = DestroyRule(match=tuple(match)), ChangeRule(match=tuple(match))
    gated = Gated(address, "o", action=action)
    assert matches(destroy_rule, gated) == matches(change_rule, gated)
    for kind in ("update", "create", "read"):
        change = Gated(f"{kind} {address}", "o", action=kind)
        assert not matches(destroy_rule, change) and not matches(change_rule, change)
        assert kind_of(change.key) == "change" and change.address == address


@given(st.text(min_size=1).filter(lambda s: s.split(" ", 1)[0] not in ("update", "create", "read", "limit", "run")))
def test_a_key_without_a_known_prefix_is_a_destroy(key: str) -> None:
    assert kind_of(key) == "destroy"


def test_a_replacement_that_forgets_the_old_object_still_creates_a_gated_object() -> None:
    # ["create","forget"] (Terraform) and ["forget","create"] (OpenTofu) create a new object: a rule that
    # gates new objects (create, as docs/gate.md says) must see it, bound to what it creates
    creates = ChangeRule(match=("type:terraform_data",), actions=("create", "replace"))
    for actions in (["create", "forget"], ["forget", "create"]):
        plan = plan_of(change("terraform_data.a", actions, {"input": "1"}, {"input": "2"}))
        gates = change_gates(plan, (creates,))
        assert list(gates) == ["create terraform_data.a"]
        assert len(gates["create terraform_data.a"].object) == 32
        assert gates["create terraform_data.a"].action == "forget-replace" and from_plain(to_plain(gates)) == gates
        other = plan_of(change("terraform_data.a", actions, {"input": "1"}, {"input": "3"}))
        assert (
            change_gates(other, (creates,))["create terraform_data.a"].object != gates["create terraform_data.a"].object
        )
        assert list(change_gates(plan, (UPDATES,))) == ["create terraform_data.a"]  # new configuration: an update too
        assert change_gates(plan, (ChangeRule(match=("*",), actions=("replace",)),)) == {}  # nothing destroyed
    plain = plan_of(change("terraform_data.a", ["forget"], {"input": "1"}))
    assert change_gates(plain, (creates,)) == {}  # a forget alone creates nothing


def test_an_update_rule_cannot_be_dodged_by_forcing_a_replacement() -> None:
    """`replace_triggered_by` or a force-new attribute turns an update into a replace: the update rule's
    approvals and approvers still apply to it, on top of what the destroy needs."""
    sre = ChangeRule(match=("type:terraform_data",), actions=("update",), approvals=2, users=("sre1", "sre2"))
    plan = plan_of(change("terraform_data.a", ["delete", "create"], {"input": "1"}, {"input": "2"}))
    gates = {P: project_gates(plan, rules=(sre,))}
    assert list(gates[P]) == ["terraform_data.a"]
    anyone = [_approve(who, gates) for who in ("bob", "carol")]
    assert not rule_coverage(gates, anyone, sha=SHA, rules=(sre,), eligible={}).complete
    sres = [_approve(who, gates) for who in ("sre1", "sre2")]
    eligible = {"sre1": frozenset({0}), "sre2": frozenset({0})}
    assert rule_coverage(gates, sres, sha=SHA, rules=(sre,), eligible=eligible).complete
    creates = ChangeRule(match=("type:terraform_data",), actions=("create",))
    assert matches(creates, gates[P]["terraform_data.a"])  # a replacement makes a new object
    assert not matches(creates, Gated("terraform_data.a", "o", action="delete"))
    assert matches(sre, Gated("terraform_data.a", "o"))  # an older record: every destroy action
    assert matches(ChangeRule(match=("*",), actions=("read",)), Gated("read data.x.y", "o"))
    assert matches(ChangeRule(match=("*",), actions=("read",)), Gated("read data.x.y", "o", action=""))
