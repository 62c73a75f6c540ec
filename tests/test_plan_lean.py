"""core.plan_lean: a plan read lean is the plan read whole (or the same refusal), in a fraction of the memory."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.plan import Plan, PlanError, parse_plan
from core.plan_lean import read_lean

PLANS = Path(__file__).parent / "fixtures" / "terraform" / "plans"
FIXTURES = sorted(p.relative_to(PLANS).as_posix() for p in PLANS.rglob("*.json") if p.name != "INDEX.json")


def _whole(data: bytes | str) -> Plan | str:
    with mock.patch("core.plan.read_lean", return_value=None):
        return _outcome(data)


def _outcome(data: bytes | str) -> Plan | str:
    try:
        return parse_plan(data)
    except PlanError as exc:
        return f"PlanError: {exc}"


def _same(data: bytes | str) -> Plan | str:
    """The outcome of both readings, asserted equal: every field, masked values and code runs included."""
    lean, whole = _outcome(data), _whole(data)
    assert lean == whole
    if isinstance(lean, Plan) and isinstance(whole, Plan):
        assert lean.sensitive_values == whole.sensitive_values
        assert [c.sensitive_values for c in lean.changes] == [c.sensitive_values for c in whole.changes]
        assert [o.sensitive_values for o in lean.outputs] == [o.sensitive_values for o in whole.outputs]
    return lean


@pytest.mark.parametrize("name", FIXTURES)
def test_every_fixture_reads_the_same_lean_or_whole(name: str) -> None:
    _same((PLANS / name).read_bytes())


def test_real_plans_are_read_lean() -> None:
    for name in ("terraform-json/basic.plan.json", "checkov/large_55_resources_tf0.12.plan.json"):
        assert read_lean((PLANS / name).read_bytes()) is not None


_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.just("a\ud800"),  # a lone surrogate: only the standard library reads it
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["id", "k", "tags"]), inner, max_size=3)
    ),
    max_leaves=12,
)
_MARKS = st.recursive(st.booleans(), lambda inner: st.dictionaries(st.sampled_from(["id", "k"]), inner, max_size=2))
_SIDES = ("before", "after", "before_sensitive", "after_sensitive", "before_identity", "importing", "replace_paths")
_ENTRY_KEYS = ("address", "mode", "type", "provider_name", "action_reason", "deposed", "previous_address")


@given(
    change=st.fixed_dictionaries(
        {"actions": st.sampled_from([["delete"], ["create"], ["update"], ["read"], ["no-op"], ["delete", "create"]])},
        optional={key: (_MARKS if "sensitive" in key else _VALUES) for key in _SIDES},
    ),
    entry=st.fixed_dictionaries({}, optional={key: _VALUES for key in _ENTRY_KEYS}),
    top=st.fixed_dictionaries({}, optional={k: _VALUES for k in ("errored", "terraform_version", "planned_values")}),
    output=_VALUES,
)
def test_any_values_read_the_same_lean_or_whole(
    change: dict[str, Any], entry: dict[str, Any], top: dict[str, Any], output: Any
) -> None:
    entry = {"address": "terraform_data.x", **entry, "change": change}
    outputs = {"o": {"actions": ["update"], "after": output, "after_sensitive": True}}
    doc = {"format_version": "1.2", **top, "resource_changes": [entry], "output_changes": outputs}
    _same(json.dumps(doc))
    _same(json.dumps(doc).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize(
    "data",
    [
        b'{"format_version": "1.2", "resource_changes": [{"address": "a.b", "change": {"actions": ["delete"],'
        b' "before": {"k": "\xff"}}}]}',  # invalid UTF-8 inside a value the lean reading skips
        b'{"format_version": "1.2", "resource_changes": [{"address": "a.b", "change": {"actions": ["delete"],'
        b' "after": [NaN]}}]}',
        b'{"format_version": "1.2", "resource_changes": [{"address": "a\\ud800.b", "change": {"actions": []}}]}',
        b'{"format_version": "1.2", "resource_changes": [{"address": "a.b", "change": {"actions": ["delete"],'
        b' "before": ' + b"[" * 5000 + b"]" * 5000 + b"}}]}",
        b'\xef\xbb\xbf{"format_version": "1.2", "resource_changes": []}',
        json.dumps({"format_version": "1.2", "resource_changes": []}).encode("utf-16"),
        b'{"format_version": "1.2", "configuration": {"root_module": {"resources": {}}}, "resource_changes": []}',
        b'{"format_version": "1.2", "resource_changes": [{"address": "a.b", "change": "x"}]}',
    ],
)
def test_what_the_lean_reading_cannot_read_is_read_or_refused_as_before(data: bytes) -> None:
    _same(data)


def _large(copies: int) -> bytes:
    """A real plan (55 AWS resources) repeated, each instance with an address of its own."""
    doc = json.loads((PLANS / "checkov/large_55_resources_tf0.12.plan.json").read_bytes())
    changes, planned = doc["resource_changes"], doc["planned_values"]["root_module"]["resources"]
    grown = copy.deepcopy(doc)
    grown["resource_changes"] = [{**c, "address": f"{c['address']}_{i}"} for i in range(copies) for c in changes]
    grown["planned_values"]["root_module"]["resources"] = [
        {**p, "address": f"{p['address']}_{i}"} for i in range(copies) for p in planned
    ]
    return json.dumps(grown).encode()


PEAK = """
import sys, tracemalloc
from core.plan import parse_plan
data = sys.stdin.buffer.read()
tracemalloc.start()
plan = parse_plan(data)
print(len(plan.changes), tracemalloc.get_traced_memory()[1])
"""


def test_a_large_plan_is_parsed_within_about_its_own_size(tmp_path: Path) -> None:
    """Measured in a fresh interpreter: tracemalloc counts every thread's allocations, and threads other
    tests left behind would be counted here."""
    data = _large(200)
    assert len(data) > 10 * 1024 * 1024
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", PEAK], input=data, capture_output=True, check=True, cwd=root, timeout=120
    )
    changes, peak = (int(n) for n in done.stdout.split())
    assert changes == 200 * 55
    assert peak < 1.5 * len(data), f"{peak / len(data):.1f}× the JSON"  # read whole, it is many times that
