"""Changed attributes of a drifted resource (core/drift_diff.py): every changed leaf once, never a secret."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.drift_diff import ABSENT, SENSITIVE, UNKNOWN, AttributeChange, attribute_changes
from core.plan import parse_plan


def changed(before: Any, after: Any, **marks: Any) -> list[tuple[str, str, str]]:
    found = attribute_changes({"before": before, "after": after, **marks})
    return [(a.path, a.before, a.after) for a in found]


def test_a_changed_leaf_is_named_by_its_path_with_both_values() -> None:
    before = {"id": "x", "input": "a", "tags": {"env": "prod", "owner": "ops"}, "ports": [80, 443]}
    after = {"id": "x", "input": "b", "tags": {"env": "staging", "owner": "ops"}, "ports": [80, 8443]}
    assert changed(before, after) == [
        ("input", '"a"', '"b"'),
        ("tags.env", '"prod"', '"staging"'),
        ("ports[1]", "443", "8443"),
    ]


def test_nothing_changed_lists_nothing() -> None:
    same = {"a": 1, "b": [1, {"c": None}], "d": {}}
    assert changed(same, json.loads(json.dumps(same))) == []


def test_keys_added_or_removed_and_lists_that_grow_read_as_absent_on_the_missing_side() -> None:
    assert changed({"tags": {"a": "1"}}, {"tags": {"b": "2"}}) == [
        ("tags.a", '"1"', ABSENT),
        ("tags.b", ABSENT, '"2"'),
    ]
    assert changed({"l": [1]}, {"l": [1, None]}) == [("l[1]", ABSENT, "null")]
    assert changed({"m": None}, {"m": {}}) == [("m", "null", "{}")]


def test_a_key_that_is_not_an_identifier_is_quoted() -> None:
    assert changed({"labels": {"a.b c": "x"}}, {"labels": {"a.b c": "y"}}) == [('labels["a.b c"]', '"x"', '"y"')]


def test_types_count_true_is_not_one_but_one_is_one_point_oh() -> None:
    assert changed({"a": True, "b": 1}, {"a": 1, "b": 1.0}) == [("a", "true", "1")]


def test_sensitive_values_are_shown_as_terraform_shows_them_on_both_sides() -> None:
    before = {"password": "hunter2-old", "user": "u"}
    after = {"password": "hunter2-new", "user": "u"}
    assert changed(before, after, before_sensitive={"password": True}, after_sensitive={"password": True}) == [
        ("password", SENSITIVE, SENSITIVE)
    ]
    # marked on one side only: hidden on both (what it was can say what it is)
    assert changed(before, after, after_sensitive={"password": True}) == [("password", SENSITIVE, SENSITIVE)]
    # a sensitive map is one entry: its keys may be secret too
    assert changed({"env": {"K1": "a"}}, {"env": {"K2": "b"}}, before_sensitive={"env": True}) == [
        ("env", SENSITIVE, SENSITIVE)
    ]
    # an unchanged secret is not listed at all
    assert changed(before | {"user": "v"}, before, before_sensitive={"password": True}) == [("user", '"v"', '"u"')]


def test_unknown_values_read_known_after_apply() -> None:
    assert changed({"id": "x", "arn": "a"}, {"id": "x", "arn": None}, after_unknown={"arn": True}) == [
        ("arn", '"a"', UNKNOWN)
    ]


def test_long_values_are_kept_whole_for_the_renderer_to_mask_then_cut() -> None:
    ((_, before, after),) = changed({"policy": "x" * 5000}, {"policy": "y"})
    assert before == json.dumps("x" * 5000) and after == '"y"'


def test_a_value_that_changed_kind_is_one_entry() -> None:
    assert changed({"v": "x"}, {"v": {"a": 1}}) == [("v", '"x"', '{"a": 1}')]
    assert changed("x", {"a": 1}) == [("(whole object)", '"x"', '{"a": 1}')]


def test_a_block_added_or_removed_is_listed_part_by_part() -> None:
    assert changed({"b": None}, {"b": {"a": 1, "c": [2]}}) == [("b.a", ABSENT, "1"), ("b.c[0]", ABSENT, "2")]
    assert changed({"b": [{"a": 1}]}, {}) == [("b[0].a", "1", ABSENT)]


def test_the_plan_keeps_the_changed_attributes_of_each_drifted_resource_only() -> None:
    entry = {
        "address": "terraform_data.x",
        "mode": "managed",
        "type": "terraform_data",
        "change": {
            "actions": ["update"],
            "before": {"input": "a", "secret": "s3cr3t-before"},
            "after": {"input": "b", "secret": "s3cr3t-after"},
            "before_sensitive": {"secret": True},
            "after_sensitive": {"secret": True},
        },
    }
    plan = parse_plan(json.dumps({"format_version": "1.2", "resource_drift": [entry], "resource_changes": [entry]}))
    assert plan.drift[0].attributes == (
        AttributeChange("input", '"a"', '"b"'),
        AttributeChange("secret", SENSITIVE, SENSITIVE),
    )
    assert plan.changes[0].attributes == ()
    assert {"s3cr3t-before", "s3cr3t-after"} <= set(plan.sensitive_values)


# Values: plain leaves, and SECRET-prefixed strings that must never be shown when marked sensitive.
_leaf = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["a", "b", "x.y", ""]))
_keys = st.sampled_from(["a", "b", "tags", "env", "k.1"])
_values = st.recursive(
    _leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=12,
)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> dict[tuple[Any, ...], Any]:
    if isinstance(value, dict) and value:
        return {p: v for k, sub in value.items() for p, v in _leaves(sub, (*path, k)).items()}
    if isinstance(value, list) and value:
        return {p: v for i, sub in enumerate(value) for p, v in _leaves(sub, (*path, i)).items()}
    return {path: value}


def _path(steps: tuple[Any, ...]) -> str:
    from core.drift_diff import _join  # the spelling under test is the module's own

    text = ""
    for step in steps:
        text = f"{text}[{step}]" if isinstance(step, int) else _join(text, step)
    return text or "(whole object)"


def _covers(entry: str, leaf: str) -> bool:
    return leaf == entry or entry == "(whole object)" or leaf.startswith((entry + ".", entry + "["))


@settings(max_examples=300, deadline=None)
@given(before=_values, after=_values)
def test_every_changed_leaf_is_listed_once(before: Any, after: Any) -> None:
    """Entries never overlap (none lies inside another), and each leaf that differs lies inside one of
    them (or, an empty list or map that gained parts, holds them)."""
    found = attribute_changes({"before": before, "after": after})
    paths = [a.path for a in found]
    assert not [(p, q) for p in paths for q in paths if p != q and _covers(p, q)], paths
    assert len(paths) == len(set(paths))
    old, new = _leaves(before), _leaves(after)
    for steps in set(old) | set(new):
        if steps in old and steps in new and json.dumps(old[steps]) == json.dumps(new[steps]):
            continue
        leaf = _path(steps)
        assert [p for p in paths if _covers(p, leaf) or _covers(leaf, p)], (leaf, paths)
    if json.dumps(before) == json.dumps(after):
        assert found == ()


@st.composite
def _secret_case(draw: st.DrawFn) -> tuple[Any, Any, Any, Any]:
    """Two objects where some top-level attributes hold secrets and are marked so on one or both sides."""
    keys = draw(st.lists(_keys, min_size=1, max_size=4, unique=True))
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    b_marks: dict[str, bool] = {}
    a_marks: dict[str, bool] = {}
    for n, key in enumerate(keys):
        if draw(st.booleans()):
            before[key] = draw(st.one_of(st.just(f"SECRET-{n}-old"), st.dictionaries(_keys, st.just(f"SECRET-{n}-in"))))
            after[key] = draw(st.one_of(st.just(f"SECRET-{n}-new"), st.just(before[key])))
            side = draw(st.sampled_from(["before", "after", "both"]))
            if side in ("before", "both"):
                b_marks[key] = True
            if side in ("after", "both"):
                a_marks[key] = True
        else:
            before[key], after[key] = draw(_values), draw(_values)
    return before, after, b_marks, a_marks


@settings(max_examples=300, deadline=None)
@given(case=_secret_case())
def test_a_sensitive_value_is_never_shown(case: tuple[Any, Any, Any, Any]) -> None:
    before, after, b_marks, a_marks = case
    found = attribute_changes(
        {"before": before, "after": after, "before_sensitive": b_marks, "after_sensitive": a_marks}
    )
    shown = " ".join(f"{a.path} {a.before} {a.after}" for a in found)
    assert "SECRET" not in shown
    for key in set(b_marks) | set(a_marks):
        if before[key] != after[key]:
            assert [(a.before, a.after) for a in found if a.path.startswith(_path((key,)))] == [(SENSITIVE, SENSITIVE)]


def test_the_lean_and_the_whole_document_readings_find_the_same_attributes() -> None:
    entry = {
        "address": "terraform_data.x",
        "mode": "managed",
        "type": "terraform_data",
        "change": {
            "actions": ["update"],
            "before": {"input": "a", "tags": {"env": "prod"}, "secret": "s3cr3t"},
            "after": {"input": "b", "tags": {"env": "dev"}, "secret": "s3cr3t-2", "arn": None},
            "after_unknown": {"arn": True},
            "before_sensitive": {"secret": True},
            "after_sensitive": {"secret": True},
        },
    }
    text = json.dumps({"format_version": "1.2", "resource_drift": [entry]})
    lean = parse_plan(text.encode())
    whole = parse_plan(text.encode("utf-16"))  # only the whole-document path reads UTF-16
    assert lean.drift[0].attributes == whole.drift[0].attributes == attribute_changes(entry["change"])
    assert [a.path for a in lean.drift[0].attributes] == ["input", "tags.env", "secret", "arn"]
    assert lean.drift[0].attributes[-1] == AttributeChange("arn", ABSENT, UNKNOWN)


def test_an_object_deleted_outside_terraform_is_named_not_listed_attribute_by_attribute() -> None:
    entry = {
        "address": "terraform_data.gone",
        "mode": "managed",
        "type": "terraform_data",
        "change": {
            "actions": ["delete"],
            "before": {"input": "a", "pw": "hunter22"},
            "after": None,
            "before_sensitive": {"pw": True},
            "after_sensitive": False,
        },
    }
    plan = parse_plan(json.dumps({"format_version": "1.2", "resource_drift": [entry]}))
    assert plan.drift[0].action_class == "delete" and plan.drift[0].attributes == ()


def test_a_value_known_only_after_apply_never_shows_a_secret_inside_its_old_value() -> None:
    """A planned update whose block becomes unknown: its old value is shown whole, so a secret leaf inside
    it (a short number no masker finds by spelling) hides the whole of it."""
    change = {
        "before": {"cfg": {"pin": 4821, "user": "x"}},
        "after": {"cfg": None},
        "before_sensitive": {"cfg": {"pin": True}},
        "after_sensitive": {},
        "after_unknown": {"cfg": True},
    }
    assert attribute_changes(change) == (AttributeChange("cfg", SENSITIVE, UNKNOWN),)
