"""What an approval can cover: a plan's gated changes, their objects and the plan's digest (core/gated.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.gated import Gated, counts, from_plain, plan_digest, plan_gates, published_digest, to_plain
from core.plan import Plan, parse_plan
from core.plan_code import CodeRun


def plan_of(*changes: dict[str, Any]) -> Plan:
    return parse_plan(json.dumps({"format_version": "1.2", "resource_changes": list(changes)}))


def change(address: str, actions: list[str], before: object = None, **extra: Any) -> dict[str, Any]:
    return {
        "address": address,
        "mode": "managed",
        "type": address.split(".")[0],
        "provider_name": "terraform.io/builtin/terraform",
        "change": {"actions": actions, "before": before, "after": None},
        **extra,
    }


RUN = CodeRun("run local-exec provisioner of terraform_data.x (at create)", "local-exec of terraform_data.x", "c" * 32)


def test_every_destroy_and_code_run_is_gated_with_its_object() -> None:
    plan = plan_of(
        change("terraform_data.a", ["delete"], {"id": "1"}),
        change("terraform_data.b", ["delete", "create"], {"id": "2"}),
        change("terraform_data.c", ["create"]),
        change("terraform_data.d[0]", ["delete"], {"id": "4"}, previous_address="terraform_data.d"),
    )
    gates = plan_gates(plan, [RUN])
    assert list(gates) == ["terraform_data.a", "terraform_data.b", "terraform_data.d[0]", RUN.key]
    assert gates["terraform_data.d[0]"].previous == "terraform_data.d"
    assert gates["terraform_data.a"].object != gates["terraform_data.b"].object
    assert gates[RUN.key] == Gated(RUN.key, RUN.digest, what=RUN.what) and gates[RUN.key].runs_code
    assert counts(gates) == {"destroy": 3, "change": 0, "code": 1, "limit": 0}
    assert RUN.key not in plan_gates(plan, [RUN], gate_code=False)


def test_the_same_address_on_another_object_is_another_gated_change() -> None:
    staging = plan_gates(plan_of(change("terraform_data.a", ["delete"], {"id": "staging-1"})))
    prod = plan_gates(plan_of(change("terraform_data.a", ["delete"], {"id": "prod-1"})))
    assert staging["terraform_data.a"].object != prod["terraform_data.a"].object
    assert plan_digest("s", "p", staging) != plan_digest("s", "p", prod)


def test_a_plan_digest_names_the_commit_the_project_and_each_change() -> None:
    gates = plan_gates(plan_of(change("terraform_data.a", ["delete"], {"id": "1"})), [RUN])
    base = plan_digest("sha1", "infra@default:infra", gates)
    assert base == plan_digest("sha1", "infra@default:infra", dict(reversed(list(gates.items()))))  # order-free
    assert len({base, plan_digest("sha2", "infra@default:infra", gates), plan_digest("sha1", "x", gates)}) == 3
    assert plan_digest("sha1", "infra@default:infra", {k: g for k, g in gates.items() if not g.runs_code}) != base
    assert published_digest({"a": base, "b": "x"}) == published_digest({"b": "x", "a": base})
    assert published_digest({"a": base}) != published_digest({"a": base, "b": "x"})


gated = st.builds(
    Gated,
    st.text(min_size=1, max_size=20),
    st.text(max_size=32),
    st.none() | st.text(min_size=1, max_size=20),
    st.text(max_size=20),
)


@given(st.lists(gated, max_size=5))
def test_gated_changes_round_trip_through_a_record(items: list[Gated]) -> None:
    gates = {g.key: g for g in items}
    assert from_plain(json.loads(json.dumps(to_plain(gates)))) == gates


@pytest.mark.parametrize("data", [[], {"a": "o"}, {"a": ["o", None]}, {"a": [1, None, None]}, {"": ["o", None, None]}])
def test_a_record_of_another_shape_is_refused(data: object) -> None:
    with pytest.raises(ValueError):
        from_plain(data)
