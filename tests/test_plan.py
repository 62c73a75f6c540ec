"""core.plan: real `show -json` fixtures, every action combination, and inputs that must fail closed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.plan import KNOWN_ACTIONS, Plan, PlanError, parse_plan, summary_line
from core.plan_json import _load

PLANS = Path(__file__).parent / "fixtures" / "terraform" / "plans"
INDEX = {entry["file"]: entry for entry in json.loads((PLANS / "INDEX.json").read_text())["plans"]}
FIXTURES = sorted(p.relative_to(PLANS).as_posix() for p in PLANS.rglob("*.json") if p.name != "INDEX.json")


def rc(address: str, actions: list[Any], mode: str = "managed", **entry: Any) -> dict[str, Any]:
    """One resource_changes entry; `change` keys go in `change=`, the rest at entry level."""
    change = {"actions": actions, "before": None, "after": None, **entry.pop("change", {})}
    return {"address": address, "mode": mode, "type": address.split(".")[0], "change": change, **entry}


def doc(*changes: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {"format_version": "1.2", "terraform_version": "1.11.4", "resource_changes": list(changes), **top}


def parse(*changes: dict[str, Any], **top: Any) -> Plan:
    return parse_plan(json.dumps(doc(*changes, **top)))


def test_every_fixture_is_listed_in_the_index() -> None:
    assert set(FIXTURES) == set(INDEX)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_agrees_with_index(name: str) -> None:
    entry = INDEX[name]
    data = (PLANS / name).read_bytes()
    if "parse_error" in entry:
        with pytest.raises(PlanError, match="not valid JSON"):
            parse_plan(data)
        return
    plan = parse_plan(data)
    raw = json.loads(data.decode("utf-16" if entry["encoding"].startswith("utf-16") else "utf-8"))
    assert plan.format_version == (entry["format_version"] or raw["plan_format_version"])
    assert plan.terraform_version == (entry["terraform_version"] or "")
    assert bool(plan.destroys) is entry["has_delete"]
    assert len(plan.changes) == entry["resource_changes"]
    assert Counter("/".join(c.actions) for c in plan.changes) == Counter(entry["actions"])
    assert sum(1 for c in plan.changes if c.deposed) == entry["deposed"]
    assert sum(1 for c in plan.changes if c.mode == "data") == entry["data_sources"]
    assert len(plan.drift) == entry["resource_drift"]
    assert Counter("/".join(o.actions) for o in plan.outputs) == Counter(entry["output_changes"])
    assert [c.address for c in plan.changes if c.previous_address] == entry["moved"]
    assert [c.address for c in plan.changes if c.importing] == entry["importing"]
    assert {c.reason for c in plan.changes if c.reason} == set(entry["action_reasons"])
    flags = entry["top_level_flags"]
    assert plan.errored is flags.get("errored", False)
    assert plan.applyable is flags.get("applyable")
    assert plan.complete is flags.get("complete")
    assert plan.unknown_actions == ()
    assert plan.counts["destroy"] == sum(1 for c in plan.changes if "delete" in c.actions)


def test_fixture_plan_error_is_errored() -> None:
    plan = parse_plan((PLANS / "opentofu/show-json/plan-error.json").read_bytes())
    assert plan.errored is True
    assert summary_line(plan) == "Planning failed."


def test_fixture_no_op_with_delete_reason_is_not_a_destroy() -> None:
    """tf-summarize's no-op change carries delete_because_no_resource_config: actions decide, not reasons."""
    plan = parse_plan((PLANS / "tf-summarize/example.tfplan.json").read_bytes())
    flagged = [c for c in plan.changes if c.reason == "delete_because_no_resource_config"]
    assert flagged and all(c.actions == ("no-op",) and not c.is_destroy for c in flagged)
    assert plan.destroys == ()


def test_fixture_sensitive_values_collected() -> None:
    plan = parse_plan((PLANS / "opentofu/show-json/sensitive-values.json").read_bytes())
    assert plan.changes[0].sensitive_values == ("boop",)
    assert [(o.name, o.sensitive, o.sensitive_values) for o in plan.outputs] == [("test", True, ("boop",))]
    assert plan.sensitive_values == ("boop",)


ACTION_TABLE = [
    (["no-op"], "no-op", False),
    (["create"], "create", False),
    (["read"], "read", False),
    (["update"], "update", False),
    (["delete"], "delete", True),
    (["delete", "create"], "replace", True),
    (["create", "delete"], "replace", True),
    (["forget"], "forget", False),
    (["create", "forget"], "forget", False),
    (["forget", "create"], "forget", False),
    (["delete", "explode"], "unknown", True),
    (["teleport"], "unknown", True),
    ([], "unknown", True),
    (["create", "update"], "unknown", True),
    (["delete", "delete"], "unknown", True),
    (["Delete"], "unknown", True),
    (["update", "create"], "unknown", True),
    (["delete", "create", "delete"], "unknown", True),
]


@pytest.mark.parametrize(("actions", "action_class", "destroys"), ACTION_TABLE)
def test_action_classes(actions: list[str], action_class: str, destroys: bool) -> None:
    plan = parse(rc("terraform_data.x", actions))
    (change,) = plan.changes
    assert change.action_class == action_class
    assert change.is_destroy is destroys
    assert plan.destroys == ((change,) if destroys else ())
    assert plan.unknown_actions == ((json.dumps(actions),) if action_class == "unknown" else ())


@pytest.mark.parametrize(("actions", "action_class", "destroys"), ACTION_TABLE)
def test_data_sources_never_destroy_unless_unknown(actions: list[str], action_class: str, destroys: bool) -> None:
    (change,) = parse(rc("data.x.y", actions, mode="data")).changes
    assert change.is_destroy is (action_class == "unknown")


@pytest.mark.parametrize(("actions", "action_class", "destroys"), ACTION_TABLE)
def test_drift_never_destroys(actions: list[str], action_class: str, destroys: bool) -> None:
    plan = parse(resource_drift=[rc("terraform_data.x", actions)])
    assert plan.drift[0].action_class == action_class
    assert plan.destroys == ()
    assert plan.unknown_actions == ()
    assert plan.counts["destroy"] == 0


def test_output_delete_is_not_a_destroy() -> None:
    plan = parse(output_changes={"gone": {"actions": ["delete"], "before": "x", "after": None}})
    assert plan.outputs[0].actions == ("delete",)
    assert plan.destroys == ()
    assert summary_line(plan) == "Plan: 0 to add, 0 to change, 0 to destroy."


def test_details_are_kept() -> None:
    plan = parse(
        rc("aws_instance.web", ["delete"], deposed="0badf00d", action_reason="delete_because_no_resource_config"),
        rc("terraform_data.new", ["no-op"], previous_address="terraform_data.old"),
        rc("terraform_data.imp", ["update"], change={"importing": {"id": "abc"}}),
        rc(
            "terraform_data.r", ["create", "delete"], change={"replace_paths": [["triggers_replace"], ["nic", 0, "id"]]}
        ),
    )
    deposed, moved, imported, replaced = plan.changes
    assert (deposed.deposed, deposed.reason, deposed.is_destroy) == (
        "0badf00d",
        "delete_because_no_resource_config",
        True,
    )
    assert (moved.previous_address, moved.is_moved, moved.is_destroy) == ("terraform_data.old", True, False)
    assert imported.importing is True and deposed.importing is False
    assert replaced.replace_paths == ("triggers_replace", "nic[0].id")
    assert plan.counts == {"add": 1, "change": 1, "destroy": 2, "import": 1, "forget": 0}


def test_missing_flags() -> None:
    plan = parse(rc("terraform_data.x", ["create"]))
    assert (plan.errored, plan.applyable, plan.complete) == (False, None, None)
    flagged = parse(rc("terraform_data.x", ["create"]), errored=True, applyable=False, complete=False)
    assert (flagged.errored, flagged.applyable, flagged.complete) == (True, False, False)


SUMMARY_TABLE = [
    ([], "No changes."),
    ([["no-op"], ["read"]], "No changes."),
    ([["create"]], "Plan: 1 to add, 0 to change, 0 to destroy."),
    ([["delete", "create"], ["delete"]], "Plan: 1 to add, 0 to change, 2 to destroy."),
    ([["create", "delete"], ["update"]], "Plan: 1 to add, 1 to change, 1 to destroy."),
    ([["forget"]], "Plan: 0 to add, 0 to change, 0 to destroy, 1 to forget."),
    ([["create", "forget"], ["create"]], "Plan: 2 to add, 0 to change, 0 to destroy, 1 to forget."),
    ([["teleport"]], "Plan: 0 to add, 0 to change, 1 to destroy."),
]


@pytest.mark.parametrize(("actions", "line"), SUMMARY_TABLE)
def test_summary_line(actions: list[list[str]], line: str) -> None:
    plan = parse(*(rc(f"terraform_data.r{i}", a) for i, a in enumerate(actions)))
    assert summary_line(plan) == line


def test_summary_line_imports_and_moves() -> None:
    imported = parse(rc("terraform_data.i", ["no-op"], change={"importing": {"id": "abc"}}))
    assert summary_line(imported) == "Plan: 1 to import, 0 to add, 0 to change, 0 to destroy."
    moved = parse(rc("terraform_data.b", ["no-op"], previous_address="terraform_data.a"))
    assert summary_line(moved) == "Plan: 0 to add, 0 to change, 0 to destroy."


def test_sensitive_values_follow_the_marks() -> None:
    change = {
        "before": {"password": "old-secret", "name": "web", "tags": {"k": "tagsecret"}, "ports": [22, 8443]},
        "after": {"password": "new-secret", "name": "web", "tags": {"k": "v"}, "ports": [22, 8443], "n": 1.0},
        "before_sensitive": {"password": True, "tags": True, "ports": [False, True]},
        "after_sensitive": {"password": True, "n": True, "flag": True},
    }
    (c,) = parse(rc("x.y", ["update"], change=change)).changes
    assert c.sensitive_values == ("old-secret", "tagsecret", "8443", "new-secret", "1")


@pytest.mark.parametrize("marks", [False, True, {}, None])
def test_sensitive_side_may_be_a_bare_boolean(marks: Any) -> None:
    change = {"before": {"a": "one", "b": ["two", True, None]}, "after": None, "before_sensitive": marks}
    (c,) = parse(rc("x.y", ["delete"], change=change)).changes
    assert c.sensitive_values == (("one", "two") if marks is True else ())


def test_decodes_utf8_bom_and_utf16() -> None:
    text = json.dumps(doc(rc("terraform_data.x", ["delete"])))
    for data in (
        text,
        "\ufeff" + text,
        text.encode(),
        b"\xef\xbb\xbf" + text.encode(),
        text.encode("utf-16"),
        b"\xfe\xff" + text.encode("utf-16-be"),
        text.encode("utf-16-le"),
        text.encode("utf-16-be"),
    ):
        assert parse_plan(data).destroys[0].address == "terraform_data.x"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"   \n", "empty"),
        (b'{"format_version": "1.2", "resource_changes": []} trailing', "Extra data"),
        (b'{"format_version": "1.2", "resource_changes": []}{}', "Extra data"),
        (b'{"format_version": "1.2", "resource_changes": [', "not valid JSON"),
        (b'{"format_version": "1.2", "x": NaN, "resource_changes": []}', "NaN"),
        (b"\xff\xfe\x00\xd8", "not valid utf-16"),
        (b'{"format_version": "1.2", "resource_changes": [], "k": "\xff"}', "not valid utf-8"),
        (b"[]", "JSON object"),
        (b'{"resource_changes": []}', "no format_version"),
        (b'{"format_version": 1.2, "resource_changes": []}', "no format_version"),
        (b'{"format_version": "2.0", "resource_changes": []}', "unsupported plan format_version '2.0'"),
        (b'{"format_version": "10.1", "resource_changes": []}', "unsupported"),
        (b'{"format_version": "1.0", "terraform_version": "1.11.4", "values": {}}', "state file"),
        (b'{"format_version": "1.2", "resource_changes": {}}', "resource_changes must be a list"),
        (b'{"format_version": "1.2", "resource_changes": [1]}', r"resource_changes\[0\] must be an object"),
        (b'{"format_version": "1.2", "resource_changes": [{"change": {"actions": []}}]}', "address"),
        (b'{"format_version": "1.2", "resource_changes": [{"address": "a.b"}]}', "change must be an object"),
        (
            b'{"format_version": "1.2", "resource_changes": [{"address": "a.b", "change": {"actions": "delete"}}]}',
            "actions must be a list of strings",
        ),
        (
            b'{"format_version": "1.2", "resource_changes": [{"address": "a.b", "change": {"actions": [null]}}]}',
            "actions must be a list of strings",
        ),
        (b'{"format_version": "1.2", "resource_changes": [], "errored": "no"}', "errored must be true or false"),
        (b'{"format_version": "1.2", "resource_changes": [], "applyable": 1}', "applyable must be"),
        (b'{"format_version": "1.2", "output_changes": []}', "output_changes must be an object"),
        (b'{"format_version": "1.2", "output_changes": {"o": {"actions": 3}}}', "output_changes.o.actions"),
        (b"[" * 100_000, "not valid JSON"),
    ],
)
def test_rejected(data: bytes, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        parse_plan(data)


def test_plan_error_is_a_value_error() -> None:
    assert issubclass(PlanError, ValueError)


def test_known_minor_versions_accepted() -> None:
    for version in ("0.1", "0.2", "1.0", "1.2", "1.99"):
        assert parse_plan(json.dumps({"format_version": version, "resource_changes": []})).format_version == version


KNOWN_VALUES = ["no-op", "create", "read", "update", "delete", "forget"]
ACTION_VALUES = st.sampled_from([*KNOWN_VALUES, "explode", "teleport", "", "DELETE", "delete "])


@given(actions=st.lists(ACTION_VALUES | st.text(max_size=8), max_size=4), mode=st.sampled_from(["managed", "data"]))
def test_destroy_iff_delete_or_unknown(actions: list[str], mode: str) -> None:
    (change,) = parse(rc("terraform_data.x", actions, mode=mode)).changes
    known = tuple(actions) in KNOWN_ACTIONS
    expected = not known or (mode == "managed" and "delete" in actions)
    assert change.is_destroy is expected


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.just("a\ud800"),  # a lone surrogate: the standard library's
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(extra=_JSON)
@example(extra=-(2**63) - 1)  # orjson reads these as floats: what hypothesis found
@example(extra=2**64)
@example(extra=[10**30, "x"])
def test_the_fast_reader_reads_exactly_what_the_standard_one_does(extra: object) -> None:
    """orjson first, the standard library for whatever orjson refuses: the same document either way."""
    text = json.dumps({"format_version": "1.2", "resource_changes": [], "extra": extra})
    assert _load(text) == json.loads(text)


def test_what_the_fast_reader_refuses_is_still_read() -> None:
    big = '{"format_version": "1.2", "resource_changes": [{"address": "a.b", "change": {"actions": ["delete"]}}]'
    for extra in (', "n": 123456789012345678901234567890}', ', "s": "\\ud800"}'):  # a long int, a lone surrogate
        assert parse_plan(big + extra).destroys[0].address == "a.b"
