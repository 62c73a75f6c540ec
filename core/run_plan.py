"""A project's plan as a run page draws it (pure): every changed resource, gated ones first, each with its
attributes before → after, masked exactly as the PR comment masks (the plan's sensitive values and the
mask patterns)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from core.plan import ResourceChange
from core.render.mask import Masker
from core.results import ProjectResult
from core.runs import Attribute, ResourceDiff, RunPlan

RESOURCE_CAP = 5000  # resources drawn per run; the rest are counted
# The order the page shows actions in: what destroys first, then what changes, then the rest.
ACTION_ORDER = ("delete", "replace", "unknown", "update", "create", "read", "forget")


def run_plan(
    result: ProjectResult, patterns: Sequence[str] = (), gated: Collection[str] = (), cap: int = RESOURCE_CAP
) -> RunPlan | None:
    """The plan of `result` drawn as a diff; None when it has no plan. `gated`: the addresses the gate holds
    (destroys, changes a change rule gates)."""
    if result.plan is None:
        return None
    masker = Masker(result.secrets, patterns)
    changed = [c for c in result.plan.changes if c.action_class != "no-op"]
    changed.sort(key=lambda c: (c.address not in gated and not c.is_destroy, _rank(c.action_class)))
    drawn = tuple(_diff(c, c.is_destroy or c.address in gated, masker) for c in changed[:cap])
    return RunPlan(drawn, max(0, len(changed) - cap))


def _rank(action: str) -> int:
    return ACTION_ORDER.index(action) if action in ACTION_ORDER else 0


def _diff(change: ResourceChange, gated: bool, masker: Masker) -> ResourceDiff:
    return ResourceDiff(
        address=masker(change.address),
        action=change.action_class,
        gated=gated,
        previous_address=masker(change.previous_address) if change.previous_address else None,
        reason=change.reason,
        attributes=tuple(Attribute(a.path, masker(a.before), masker(a.after)) for a in change.attributes),
    )
