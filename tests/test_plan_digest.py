"""ResourceChange.object_digest: which real object a change acts on, safe to publish in a PR comment."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.plan import ResourceChange, parse_plan
from core.plan_json import digest, masked

PROVIDER = "registry.terraform.io/hashicorp/aws"

leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
values: st.SearchStrategy[Any] = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=5), values, min_size=1, max_size=4)


def change_digest(before: Any, marks: Any = None, **change: Any) -> str:
    entry = {
        "address": "aws_s3_bucket.b",
        "mode": "managed",
        "type": "aws_s3_bucket",
        "provider_name": change.pop("provider_name", PROVIDER),
        "change": {"actions": ["delete"], "before": before, "after": None, "before_sensitive": marks, **change},
    }
    (parsed,) = parse_plan(json.dumps({"format_version": "1.2", "resource_changes": [entry]})).changes
    return parsed.object_digest


def leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Where each leaf is; an empty list or object is a leaf too."""
    if isinstance(value, dict) and value:
        return [p for k, v in value.items() for p in leaf_paths(v, (*path, k))]
    if isinstance(value, list) and value:
        return [p for i, v in enumerate(value) for p in leaf_paths(v, (*path, i))]
    return [path]


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    return [replaced(v, rest, new) if i == head else v for i, v in enumerate(value)]


def marks_at(value: Any, path: tuple[Any, ...]) -> Any:
    """A before_sensitive that marks exactly the leaf at `path`, mirroring `value`'s shape above it."""
    if not path:
        return True
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {head: marks_at(value[head], rest)}
    return [marks_at(v, rest) if i == head else False for i, v in enumerate(value)]


def other(leaf: Any) -> Any:
    return "changed" if leaf != "changed" else "changed again"


@given(objects)
def test_digest_is_32_hex_and_ignores_key_order(before: dict[str, Any]) -> None:
    reordered = dict(reversed(list(before.items())))
    assert change_digest(before) == change_digest(reordered)
    assert len(change_digest(before)) == 32 and all(c in "0123456789abcdef" for c in change_digest(before))


@given(objects, st.data())
def test_any_non_sensitive_leaf_changes_the_digest(before: dict[str, Any], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(leaf_paths(before)))
    leaf = before
    for step in path:
        leaf = leaf[step]
    assert change_digest(replaced(before, path, other(leaf))) != change_digest(before)


@given(objects, st.data())
def test_a_sensitive_leaf_never_changes_the_digest(before: dict[str, Any], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(leaf_paths(before)))
    marks = marks_at(before, path)
    secret = data.draw(leaves)
    assert change_digest(replaced(before, path, secret), marks) == change_digest(before, marks)


def test_the_secret_is_not_in_what_is_digested() -> None:
    """Nothing of the value reaches the hash: guessing `hunter2` and hashing cannot confirm it."""
    before = {"id": "b", "password": "hunter2", "tags": {"k": "hunter2"}}
    marks = {"password": True, "tags": True}
    assert "hunter2" not in json.dumps(masked(before, marks))
    assert change_digest(before, marks) == change_digest({**before, "password": "x", "tags": {}}, marks)


def test_the_object_decides_not_the_address_alone() -> None:
    arn = {"id": "b", "arn": "arn:aws:s3:::b", "account": "111111111111"}
    assert change_digest(arn) != change_digest({**arn, "account": "222222222222"})
    assert change_digest(arn) != change_digest({**arn, "id": "c"})
    assert change_digest(arn) != change_digest(arn, provider_name="registry.opentofu.org/hashicorp/aws")
    assert change_digest(arn) != change_digest(arn, before_identity={"account_id": "111111111111"})
    one = change_digest(arn, before_identity={"account_id": "111111111111"})
    assert one != change_digest(arn, before_identity={"account_id": "222222222222"})


def test_a_whole_side_marked_or_unmarked_by_a_bare_boolean() -> None:
    assert change_digest({"id": "a"}, True) == change_digest({"id": "b"}, True)
    assert change_digest({"id": "a"}, False) != change_digest({"id": "b"}, False)


def test_digest_is_part_of_equality() -> None:
    def changes(object_id: int) -> tuple[ResourceChange, ...]:
        change = {"actions": ["delete"], "before": {"id": object_id}}
        entry = {"address": "t.a", "mode": "managed", "type": "t", "change": change}
        return parse_plan(json.dumps({"format_version": "1.2", "resource_changes": [entry]})).changes

    first, second = changes(1), changes(2)
    assert first != second and first[0].address == second[0].address


def test_deposed_objects_are_told_apart_by_their_own_before() -> None:
    def entry(deposed: str | None, object_id: str) -> dict[str, Any]:
        change = {"actions": ["delete"], "before": {"id": object_id}}
        return {"address": "t.a", "mode": "managed", "type": "t", "deposed": deposed, "change": change}

    doc = {"format_version": "1.2", "resource_changes": [entry(None, "cur"), entry("0badf00d", "old")]}
    current, deposed = parse_plan(json.dumps(doc)).changes
    assert current.object_digest != deposed.object_digest


def test_canonical_digest_is_pinned() -> None:
    """Sorted keys, no whitespace, UTF-8: changing the form would void every approval in flight."""
    expected = hashlib.sha256('{"a":null,"b":[1,"é"]}'.encode()).hexdigest()[:32]
    assert digest({"b": [1, "é"], "a": None}) == expected == "f8f17faab95c024891d173fa43442b0e"


@given(values)
def test_orjson_writes_the_canonical_form(value: Any) -> None:
    """Floats aside (orjson writes 1e16 where the standard library writes 1e+16), both write the same text."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert digest(value) == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@pytest.mark.parametrize("value", [{"n": 2**70, "s": "é"}, {"s": "\ud800"}, {"b": 2**64, "a": [1.5, None]}])
def test_what_orjson_refuses_is_digested_the_same_canonical_way(value: Any) -> None:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert digest(value) == hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
