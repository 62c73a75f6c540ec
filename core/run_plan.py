"""A project's plan as a run page draws it (pure): every changed resource, gated ones first, each with its
attributes before → after, masked exactly as the PR comment masks (the plan's sensitive values and the
mask patterns).

The attributes are drawn from the plan's JSON, not from the parsed Plan: drawing every change's
attributes while parsing made a large plan's parse several times slower (benchmarks/RESULTS.md), and the
parse is on the gate's path. So the caller hands the same `show -json` bytes the Plan was parsed from, and
only the resources drawn (at most `cap`) have their values decoded and walked.

Sizes are bounded: a value (or path) is masked whole, then cut to VALUE_CAP characters (cut first, a
secret split by the cut would no longer be found); a resource shows at most ATTRIBUTE_CAP attributes,
and a run's attributes at most TEXT_BUDGET characters in all; what is left out is counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

from msgspec import Raw

from core.drift_diff import attributes_of, cut
from core.gated import change_key, destroy_key
from core.plan import Plan, PlanError, ResourceChange
from core.plan_json import load_document, value_of
from core.plan_lean import read_changes
from core.render.mask import Masker
from core.results import ProjectResult
from core.runs import Attribute, ResourceDiff, RunPlan

RESOURCE_CAP = 5000  # resources drawn per run; the rest are counted
ATTRIBUTE_CAP = 500  # attributes drawn per resource; the rest are counted
VALUE_CAP = 4000  # characters of one value or path, once masked; longer ones end with "…"
TEXT_BUDGET = 4_000_000  # characters of attribute text per run; past it, resources are listed bare
# The order the page shows actions in: what destroys first, then what changes, then the rest.
ACTION_ORDER = ("delete", "replace", "unknown", "update", "create", "read", "forget")
_INDEX = re.compile(r"\[(\d+)\]")  # a count index in an address, compared as a number
Mask = Callable[[str], str]


def run_plan(
    result: ProjectResult,
    patterns: Sequence[str] = (),
    gated: Collection[str] = (),
    cap: int = RESOURCE_CAP,
    *,
    source: bytes | str | None = None,
    secrets: Iterable[str] = (),
    backstop: Callable[[str], str] | None = None,
) -> RunPlan | None:
    """The plan of `result` drawn as a diff; None when it has no plan. `gated`: what the gate holds, as
    core.gated keys or addresses (destroys are gated whatever it says). `source`: the `show -json` output
    `result.plan` was parsed from; without it (or when it is not that plan) resources are listed without
    attributes. `secrets`: more values to mask, e.g. the other projects' of the same PR comment. `backstop`:
    a last mask after those (plangate's own secrets and tokens: core.render.backstop), as comments get."""
    plan = result.plan
    if plan is None:
        return None
    first = Masker([*plan.sensitive_values, *secrets], patterns)
    masker: Mask = first if backstop is None else lambda text: backstop(first(text))
    raw = _raw_changes(plan, source)
    held = set(gated)
    changed = [i for i, c in enumerate(plan.changes) if c.action_class != "no-op"]
    changed.sort(key=lambda i: _order(plan.changes[i], held))
    budget = TEXT_BUDGET
    drawn = []
    for i in changed[:cap]:
        change = plan.changes[i]
        diff = _diff(change, _is_gated(change, held), raw[i] if raw is not None else None, masker, budget)
        budget -= sum(_size(a) for a in diff.attributes)
        drawn.append(diff)
    outputs = tuple(masker(o.name) for o in plan.outputs if o.actions != ("no-op",))
    return RunPlan(tuple(drawn), max(0, len(changed) - cap), outputs)


def _raw_changes(plan: Plan, source: bytes | str | None) -> list[Any] | None:
    """The `change` of each entry of `resource_changes` (undecoded when read lean), when `source` is the
    plan parsed: as many entries, at the same addresses."""
    if source is None:
        return None
    read: list[tuple[Any, Any]] | None = read_changes(source)
    if read is None:
        try:
            entries = load_document(source).get("resource_changes") or []
        except PlanError:
            return None
        if not isinstance(entries, list):
            return None
        read = [(e.get("address"), e.get("change")) for e in entries if isinstance(e, dict)]
    if len(read) != len(plan.changes) or any(a != c.address for (a, _), c in zip(read, plan.changes, strict=True)):
        return None
    return [change for _, change in read]


def _is_gated(change: ResourceChange, gated: Collection[str]) -> bool:
    return change.is_destroy or any(k in gated for k in (change.address, destroy_key(change), change_key(change)))


def _order(change: ResourceChange, gated: Collection[str]) -> tuple[int, int, list[str | int]]:
    """Destroys first, then the other gated changes, then the rest; by action, then by address (x[2]
    before x[10]); sorted stably, so objects of one address (a deposed one) stay in the plan's order."""
    group = 0 if change.is_destroy else 1 if _is_gated(change, gated) else 2
    rank = ACTION_ORDER.index(change.action_class) if change.action_class in ACTION_ORDER else 0
    parts: list[str | int] = [int(p) if n % 2 else p for n, p in enumerate(_INDEX.split(change.address))]
    return group, rank, parts


def _diff(change: ResourceChange, gated: bool, raw: Any, masker: Mask, budget: int) -> ResourceDiff:
    """One resource: its attributes masked, then cut, as many as ATTRIBUTE_CAP and `budget` allow."""
    found: tuple[Attribute, ...] = ()
    values = _decoded(raw)
    if isinstance(values, dict):
        paths = values.get("replace_paths")
        found = attributes_of(values, paths if isinstance(paths, list) else ())
    shown: list[Attribute] = []
    for a in found[:ATTRIBUTE_CAP]:
        drawn = Attribute(
            cut(masker(a.path), VALUE_CAP), _mask(a.before, masker), _mask(a.after, masker), a.forces_replacement
        )
        budget -= _size(drawn)
        if budget < 0:
            break
        shown.append(drawn)
    return ResourceDiff(
        address=masker(change.address),
        action=change.action_class,
        gated=gated,
        previous_address=masker(change.previous_address) if change.previous_address else None,
        reason=change.reason,
        attributes=tuple(shown),
        deposed=change.deposed,
        attributes_omitted=len(found) - len(shown),
    )


def _decoded(raw: Any) -> Any:
    if not isinstance(raw, Raw):
        return raw
    try:
        return value_of(memoryview(raw)) if len(raw) else None
    except PlanError:
        return None


def _mask(text: str | None, masker: Mask) -> str | None:
    return None if text is None else cut(masker(text), VALUE_CAP)


def _size(attribute: Attribute) -> int:
    return len(attribute.path) + len(attribute.before or "") + len(attribute.after or "")
