"""What `/accept-drift` may apply (core/drift_accept.py): a refresh-only plan that acts on nothing, and nothing else."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.commands import COMMANDS, Command, NearMiss, parse_command
from core.drift_accept import refresh_only_refusal
from core.plan import KNOWN_ACTIONS, CodeRun, parse_plan


def plan(changes: list[dict[str, Any]] | None = None, **top: Any) -> Any:
    doc: dict[str, Any] = {"format_version": "1.2", "applyable": True, "complete": True, "errored": False, **top}
    if changes is not None:
        doc["resource_changes"] = changes
    doc.setdefault("resource_drift", [_entry("terraform_data.x", ["update"])])
    return parse_plan(json.dumps(doc))


def _entry(address: str, actions: list[str], **extra: Any) -> dict[str, Any]:
    change = {"actions": actions, "before": {"input": "a"}, "after": {"input": "b"}, **extra.pop("change", {})}
    return {"address": address, "mode": "managed", "type": "terraform_data", "change": change, **extra}


def test_a_refresh_only_plan_as_terraform_writes_it_may_be_applied() -> None:
    assert refresh_only_refusal(plan()) is None  # terraform writes no resource_changes for one
    assert refresh_only_refusal(plan([_entry("terraform_data.x", ["no-op"])])) is None


@pytest.mark.parametrize("actions", [a for a, cls in KNOWN_ACTIONS.items() if cls != "no-op"])
def test_any_resource_action_is_refused(actions: tuple[str, ...]) -> None:
    reason = refresh_only_refusal(plan([_entry("terraform_data.y", list(actions))]))
    assert reason is not None and "`terraform_data.y`" in reason and ", ".join(actions) in reason


@given(
    st.lists(
        st.sampled_from(["create", "delete", "update", "read", "no-op", "forget", "bogus"]), min_size=1, max_size=3
    )
)
def test_every_actions_list_but_a_plain_no_op_is_refused(actions: list[str]) -> None:
    reason = refresh_only_refusal(plan([_entry("terraform_data.y", actions)]))
    assert (reason is None) == (actions == ["no-op"])


def test_a_deposed_object_being_deleted_is_refused() -> None:
    assert refresh_only_refusal(plan([_entry("terraform_data.y", ["delete"], deposed="00000001")])) is not None


def test_a_move_terraform_records_only_as_drift_is_refused() -> None:
    """terraform 1.11's `plan -refresh-only` with a `moved` block writes no resource_changes: the move is a
    `resource_drift` entry with `previous_address`, and applying the plan moves the object in the state."""
    moved = _entry("terraform_data.new", ["no-op"], previous_address="terraform_data.old")
    edited = _entry("terraform_data.x", ["update"])
    reason = refresh_only_refusal(plan(resource_drift=[edited, moved]))
    assert reason is not None and "`terraform_data.new`" in reason and "terraform_data.old" in reason


def test_a_move_or_an_import_is_refused_even_as_a_no_op() -> None:
    moved = _entry("terraform_data.new", ["no-op"], previous_address="terraform_data.old")
    assert "first `terraform_data.new`" in (refresh_only_refusal(plan([moved])) or "")
    imported = _entry("terraform_data.y", ["no-op"], change={"importing": {"id": "i-1"}})
    assert refresh_only_refusal(plan([imported])) is not None


def test_an_errored_or_incomplete_plan_is_refused() -> None:
    assert "errored" in (refresh_only_refusal(plan(errored=True)) or "")
    assert "incomplete" in (refresh_only_refusal(plan(complete=False)) or "")


def test_a_plan_that_would_run_code_at_apply_is_refused() -> None:
    run = CodeRun("run providers from terraform.d/plugins", "provider binaries committed at infra", "0" * 32)
    assert "provider binaries committed" in (refresh_only_refusal(plan(), [run]) or "")


def test_output_changes_alone_are_allowed_they_live_in_the_state() -> None:
    outputs = {"o": {"actions": ["update"], "before": "a", "after": "b"}}
    assert refresh_only_refusal(plan(output_changes=outputs)) is None


def test_accept_drift_is_a_command_without_arguments_and_its_look_alikes_are_near_misses() -> None:
    assert parse_command("/accept-drift") == Command("accept-drift", ())
    assert parse_command("/accept-drift\nbecause the console change is right") == Command("accept-drift", ())
    for written, why in (
        ("/accept-drift app", "takes no arguments"),
        ("/accept_drift", "exactly"),
        ("/Accept-Drift", "exactly"),
        ("/accept drift", "one word"),
        ("/acept-drift", "unknown command"),
    ):
        near = parse_command(written)
        assert isinstance(near, NearMiss) and near.suggestion == "accept-drift" and why in near.reason, written
    assert COMMANDS[:3] == ("approve-destroy", "plan", "help"), "appended, never reordered"
