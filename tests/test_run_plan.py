"""core.run_plan: the plan a run page draws: every changed resource in the page's order, attribute by
attribute from the plan's own JSON, masked as the PR comment masks, its sizes bounded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.run_plan
from core.drift_diff import SENSITIVE, UNKNOWN, attributes_of
from core.plan import parse_plan
from core.render.backstop import Backstop
from core.render.mask import MASK
from core.results import ProjectResult
from core.run_plan import ACTION_ORDER, VALUE_CAP, run_plan
from core.runs import Attribute, ResourceDiff, RunPlan, plan_from, to_plain
from tests.test_attributes import changes

PLANS = Path(__file__).parent / "fixtures" / "terraform" / "plans"
ACTIONS = {
    "create": ["create"],
    "delete": ["delete"],
    "update": ["update"],
    "replace": ["delete", "create"],
    "replace-cbd": ["create", "delete"],
    "read": ["read"],
    "no-op": ["no-op"],
    "forget": ["forget"],
    "unknown": ["explode"],
}


def drawn(data: bytes | str, **kw: Any) -> RunPlan:
    result = ProjectResult("app", "infra", "default", "terraform", "a" * 40, parse_plan(data))
    page = run_plan(result, source=kw.pop("source", data), **kw)
    assert page is not None
    return page


def fixture(name: str) -> bytes:
    return (PLANS / name).read_bytes()


def entry(address: str, action: str, change: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    body = {"before": {"id": "x"}, "after": {"id": "x"}} if change is None else change
    mode = "data" if address.startswith("data.") else "managed"
    return {"address": address, "mode": mode, "type": "t", **extra, "change": {"actions": ACTIONS[action], **body}}


def plan_json(*entries: dict[str, Any], outputs: dict[str, Any] | None = None) -> str:
    doc: dict[str, Any] = {"format_version": "1.2", "resource_changes": list(entries)}
    if outputs is not None:
        doc["output_changes"] = outputs
    return json.dumps(doc)


def test_a_real_create_shows_its_values_and_what_is_known_after_apply() -> None:
    page = drawn(fixture("opentofu/show-json/basic-create.json"))
    assert [r.address for r in page.resources] == [f"test_instance.test[{i}]" for i in range(3)]
    assert {r.attributes for r in page.resources} == {
        (Attribute("ami", None, '"bar"'), Attribute("id", None, UNKNOWN)),
    }
    assert [r.action for r in page.resources] == ["create"] * 3 and not any(r.gated for r in page.resources)


def test_a_real_delete_comes_first_and_shows_what_goes_and_the_update_its_change() -> None:
    page = drawn(fixture("opentofu/show-json/basic-delete.json"))
    delete, update = page.resources
    assert (delete.address, delete.action, delete.gated) == ("test_instance.test-delete", "delete", True)
    assert delete.reason == "delete_because_no_resource_config"
    assert delete.attributes == (Attribute("ami", '"foo"', None), Attribute("id", '"placeholder"', None))
    assert (update.action, update.gated, update.attributes) == ("update", False, (Attribute("ami", '"foo"', '"bar"'),))
    assert page.outputs_changed == ("test",)


def test_a_real_replace_marks_what_forces_it() -> None:
    (replace,) = drawn(fixture("opentofu/show-json/requires-replace.json")).resources
    assert (replace.action, replace.gated) == ("replace", True)
    assert replace.attributes == (
        Attribute("ami", '"bar"', '"force-replace"', forces_replacement=True),
        Attribute("id", '"placeholder"', UNKNOWN),
    )
    (in_list,) = drawn(fixture("opentofu/equivalence/replace_within_list.plan.json")).resources
    assert in_list.attributes == (
        Attribute(
            "list[1].id", '"6A8C6A29-D417-480A-BE19-12D7398B3178"', '"07F887E2-FDFF-4B2E-9BFB-B6AA4A05EDB9"', True
        ),
    )


def test_real_sensitive_values_are_shown_as_terraform_shows_them_and_never_elsewhere() -> None:
    data = fixture("opentofu/show-json/sensitive-count.json")
    page = drawn(data)
    for resource in page.resources:
        assert resource.attributes == (
            Attribute("ami", None, SENSITIVE),
            Attribute("password", None, SENSITIVE),
            Attribute("id", None, UNKNOWN),
        )
    # "secret" is sensitive: wherever else it shows, it is masked (here: in an output's name)
    doc = json.loads(data)
    doc["output_changes"] = {"the-secret-name": {"actions": ["create"], "before": None, "after": 1}}
    assert drawn(json.dumps(doc)).outputs_changed == (f"the-{MASK}-name",)


@pytest.mark.parametrize("name", sorted(p.relative_to(PLANS).as_posix() for p in PLANS.rglob("*.json")))
def test_every_fixture_draws_each_change_with_what_the_walk_finds(name: str) -> None:
    try:
        plan = parse_plan(fixture(name))
    except ValueError:
        return  # refused plans have no page to draw
    page = drawn(fixture(name), cap=100_000)
    changed = [c for c in plan.changes if c.action_class != "no-op"]
    assert sorted(r.address for r in page.resources) == sorted(c.address for c in changed)
    doc = json.loads(fixture(name).decode("utf-16") if name.endswith("utf16_bom.plan.json") else fixture(name))
    walked = {
        (e["address"], e.get("deposed")): attributes_of(e["change"], e["change"].get("replace_paths") or [])
        for e in doc.get("resource_changes", [])
    }
    for r in page.resources:
        if not r.attributes_omitted:
            assert len(r.attributes) == len(walked[(r.address, r.deposed)]), r.address


def _result(data: str) -> ProjectResult:
    return ProjectResult("app", "infra", "default", "terraform", "a" * 40, parse_plan(data))


def test_the_order_is_destroys_then_gated_changes_then_by_action_then_by_address() -> None:
    data = plan_json(
        entry("t.create[10]", "create"),
        entry("t.create[2]", "create"),
        entry("t.update", "update"),
        entry("t.gated_update", "update"),
        entry("t.gated_create", "create"),
        entry("data.t.read", "read"),
        entry("t.same", "no-op"),
        entry("t.forget", "forget"),
        entry("t.odd", "unknown"),
        entry("t.cbd", "replace-cbd"),
        entry("t.gone", "delete"),
        entry("t.gone", "delete", deposed="00abc"),
        entry("t.replace", "replace"),
    )
    page = run_plan(_result(data), gated={"update t.gated_update", "t.gated_create"}, source=data)
    assert page is not None
    assert [(r.address, r.action, r.gated, r.deposed) for r in page.resources] == [
        ("t.gone", "delete", True, None),
        ("t.gone", "delete", True, "00abc"),
        ("t.cbd", "replace", True, None),
        ("t.replace", "replace", True, None),
        ("t.odd", "unknown", True, None),
        ("t.gated_update", "update", True, None),
        ("t.gated_create", "create", True, None),
        ("t.update", "update", False, None),
        ("t.create[2]", "create", False, None),
        ("t.create[10]", "create", False, None),
        ("data.t.read", "read", False, None),
        ("t.forget", "forget", False, None),
    ]
    assert page.omitted == 0


@st.composite
def _plans(draw: st.DrawFn) -> tuple[str, set[str]]:
    names = draw(st.lists(st.sampled_from(["a", "b", "a1", "b_2"]), min_size=1, max_size=12))
    entries = [entry(f"t.{name}[{draw(st.integers(0, 12))}]", draw(st.sampled_from(sorted(ACTIONS)))) for name in names]
    gated = {e["address"] for e in entries if draw(st.booleans())}
    return plan_json(*entries), gated


@settings(max_examples=200, deadline=None)
@given(case=_plans(), cap=st.integers(0, 14))
def test_any_plan_is_drawn_in_order_and_capped(case: tuple[str, set[str]], cap: int) -> None:
    data, gated = case
    result = _result(data)
    page = run_plan(result, gated=gated, cap=cap, source=data)
    assert page is not None
    assert result.plan is not None
    changed = [c for c in result.plan.changes if c.action_class != "no-op"]
    assert len(page.resources) == min(cap, len(changed)) and page.omitted == len(changed) - len(page.resources)

    def key(r: ResourceDiff) -> tuple[int, int, str, int]:
        destroy = r.action in ("delete", "replace", "unknown")
        name, index = r.address.rstrip("]").split("[")
        return (0 if destroy else 1 if r.gated else 2), ACTION_ORDER.index(r.action), name, int(index)

    keys = [key(r) for r in page.resources]
    assert keys == sorted(keys)
    assert all(r.gated == (r.action in ("delete", "replace", "unknown") or r.address in gated) for r in page.resources)
    # what is cut is what would have come last
    whole = run_plan(result, gated=gated, cap=len(changed), source=data)
    assert whole is not None and whole.resources[: len(page.resources)] == page.resources


@settings(max_examples=200, deadline=None)
@given(case=st.lists(changes(), min_size=1, max_size=4))
def test_no_secret_reaches_the_page(case: list[tuple[str, dict[str, Any], list[list[Any]], list[str]]]) -> None:
    """Random creates, deletes, updates and replacements with random secrets: none reaches any text of the
    page, and each resource shows what the walk found."""
    action_of = {"create": "create", "delete": "delete", "update": "update", "replace": "replace"}
    entries = [
        entry(f"t.r[{i}]", action_of[action], {**change, "replace_paths": paths})
        for i, (action, change, paths, _) in enumerate(case)
    ]
    secrets = [s for *_, found in case for s in found]
    page = drawn(plan_json(*entries), cap=100)
    texts = [t for r in page.resources for a in r.attributes for t in (a.path, a.before, a.after) if t]
    assert not [s for s in secrets for t in texts if s in t]
    by_address = {r.address: r for r in page.resources}
    for i, (_, change, paths, _) in enumerate(case):
        shown = by_address[f"t.r[{i}]"].attributes
        walked = attributes_of(change, paths)
        assert [(a.path, a.forces_replacement) for a in shown] == [(a.path, a.forces_replacement) for a in walked]


def test_values_are_masked_whole_then_cut() -> None:
    """A secret across the cut is masked before it is cut: no prefix of it is left to read."""
    secret = "tok-" + "z" * 40
    long = "x" * (VALUE_CAP - 12) + secret + "tail"
    data = plan_json(
        entry("t.holder", "create", {"before": None, "after": {"pw": secret}, "after_sensitive": {"pw": True}}),
        entry("t.plain", "create", {"before": None, "after": {"doc": long, "key": "AKIAABCDEFGHIJKLMNOP"}}),
    )
    page = drawn(data, patterns=[r"AKIA[A-Z0-9]{16}"])
    (plain,) = [r for r in page.resources if r.address == "t.plain"]
    doc, key = plain.attributes
    assert doc.after is not None and len(doc.after) == VALUE_CAP and doc.after.endswith("…")
    assert "tok-" not in doc.after and MASK[:10] in doc.after
    assert key.after == f'"{MASK}"'


def test_secrets_of_other_projects_and_addresses_are_masked() -> None:
    data = plan_json(entry('t.m["hunter2-key"]', "create", {"before": None, "after": {"v": "uses hunter2-key"}}))
    page = drawn(data, secrets=["hunter2-key"])
    (r,) = page.resources
    assert r.address == f't.m["{MASK}"]' and r.attributes == (Attribute("v", None, f'"uses {MASK}"'),)


def test_attributes_past_the_caps_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    many = {f"k{i}": i for i in range(8)}
    data = plan_json(
        entry("t.a", "create", {"before": None, "after": many}),
        entry("t.b", "create", {"before": None, "after": many}),
    )
    monkeypatch.setattr(core.run_plan, "ATTRIBUTE_CAP", 5)
    a, b = drawn(data).resources
    assert [len(a.attributes), a.attributes_omitted, len(b.attributes), b.attributes_omitted] == [5, 3, 5, 3]
    monkeypatch.setattr(core.run_plan, "TEXT_BUDGET", 6 * len("k1") + 6 * len("1"))
    a, b = drawn(data).resources
    assert [len(a.attributes), a.attributes_omitted, len(b.attributes), b.attributes_omitted] == [5, 3, 1, 7]


def test_without_its_own_json_the_page_lists_resources_bare() -> None:
    data = plan_json(entry("t.a", "create", {"before": None, "after": {"v": 1}}))
    other = plan_json(entry("t.b", "create", {"before": None, "after": {"v": 1}}))
    assert drawn(data).resources[0].attributes == (Attribute("v", None, "1"),)
    for source in (None, other, "not json", plan_json()):
        (r,) = drawn(data, source=source).resources
        assert (r.address, r.attributes, r.attributes_omitted) == ("t.a", (), 0)


def test_the_whole_document_reading_draws_what_the_lean_one_does() -> None:
    data = plan_json(
        entry("t.a", "replace", {"before": {"v": 1, "s": "pw-old1"}, "after": {"v": 2, "s": "pw-new1"}}),
        entry("t.b", "create", {"before": None, "after": {"v": [1, {"w": None}]}, "after_unknown": {"id": True}}),
        entry("t.c", "create", {"before": None, "after": {"big": 123456789012345678901234567890, "f": 1.5}}),
    )
    assert drawn(data.encode("utf-16"), source=data.encode("utf-16")) == drawn(data) == drawn(data.encode())
    (big,) = (r for r in drawn(data).resources if r.address == "t.c")
    assert big.attributes == (Attribute("big", None, "123456789012345678901234567890"), Attribute("f", None, "1.5"))


def test_outputs_changed_are_named_and_no_ops_left_out() -> None:
    outputs = {
        "same": {"actions": ["no-op"], "before": 1, "after": 1},
        "new": {"actions": ["create"], "before": None, "after": 2},
        "gone": {"actions": ["delete"], "before": 1, "after": None},
    }
    data = plan_json(entry("t.a", "update"), outputs=outputs)
    assert drawn(data).outputs_changed == ("new", "gone")


def test_a_drawn_plan_is_stored_and_read_back_whole() -> None:
    data = plan_json(
        entry("t.a", "replace", {"before": {"v": 1}, "after": {"v": 2}, "replace_paths": [["v"]]}),
        entry("t.a", "delete", {"before": {"v": 0}, "after": None}, deposed="0001"),
    )
    page = drawn(data)
    assert page.resources[0].deposed == "0001" and page.resources[1].attributes[0].forces_replacement
    assert plan_from(json.loads(json.dumps(to_plain(page)))) == page
    old = {
        "resources": [
            {"address": "t.a", "action": "delete", "attributes": [{"path": "v", "before": "1", "after": None}]}
        ]
    }
    assert plan_from(old) == RunPlan((ResourceDiff("t.a", "delete", attributes=(Attribute("v", "1", None),)),))


def test_the_backstop_masks_plangates_own_secrets_after_the_plans() -> None:
    # an OIDC token a plan read (file() of its token file) into an attribute
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOmEvYiJ9.c2lnbmF0dXJlLWJ5dGVzLWhlcmUtMTIzNDU2"
    data = plan_json(entry("terraform_data.t", "create", {"before": None, "after": {"input": f"x {token} y"}}))
    shown = json.dumps(to_plain(drawn(data, backstop=Backstop())))
    assert token not in shown and "x (sensitive value) y" in shown
    assert token in json.dumps(to_plain(drawn(data)))  # the plan's own masks do not know it
