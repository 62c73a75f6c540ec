"""Plan + approvals → apply or block (pure). Everything unexpected blocks: the gate fails closed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.plan import Plan, ResourceChange

VerdictKind = Literal["apply", "blocked", "error"]


def destroy_key(change: ResourceChange) -> str:
    """What an approval names: the address, plus the deposed key when a leftover object is deleted."""
    return f"{change.address} (deposed {change.deposed})" if change.deposed else change.address


def destroy_keys(plan: Plan) -> tuple[str, ...]:
    return tuple(dict.fromkeys(destroy_key(c) for c in plan.destroys))


@dataclass(frozen=True)
class Verdict:
    """The gate's answer on one plan, before any approval: may it be applied as it stands?"""

    kind: VerdictKind
    destroys: tuple[ResourceChange, ...]
    reasons: tuple[str, ...]


def _untrusted(plan: Plan) -> list[str]:
    """Why this plan must not be applied whatever anyone approves; empty when it can be trusted."""
    reasons = []
    if plan.errored:
        reasons.append("terraform reported errors while planning; the plan is incomplete and cannot be applied")
    if plan.unknown_actions:
        reasons.append(f"unknown change actions {', '.join(plan.unknown_actions)}; treated as destroys")
    if plan.applyable is False and not plan.errored and plan.has_changes:
        reasons.append("the plan lists changes but terraform says it cannot be applied")
    return reasons


def _nothing_to_do(plan: Plan) -> bool:
    """Terraform's own `applyable` when it wrote one (≥ 1.8), else: no resource, move or output change."""
    return plan.applyable is False or (plan.applyable is None and not plan.has_changes)


def verdict(plan: Plan) -> Verdict:
    """apply: nothing is destroyed · blocked: destroys need /approve-destroy · error: cannot decide."""
    destroys = plan.destroys
    untrusted = _untrusted(plan)
    if untrusted:
        return Verdict("error", destroys, tuple(untrusted))
    if destroys:
        n = len(destroy_keys(plan))
        return Verdict("blocked", destroys, (f"{n} to destroy; needs /approve-destroy",))
    if _nothing_to_do(plan):
        return Verdict("apply", (), ("no changes; nothing to apply",))
    return Verdict("apply", (), ("no destroys",))


@dataclass(frozen=True)
class Apply:
    """Apply the saved plan; `destroys` are the approved destroy keys it carries out."""

    destroys: tuple[str, ...]


@dataclass(frozen=True)
class Block:
    """Do not apply. `error` means the plan itself is untrustworthy: an approval cannot unblock it."""

    reasons: tuple[str, ...]
    unapproved: tuple[str, ...]
    error: bool = False


@dataclass(frozen=True)
class Noop:
    """Terraform found nothing to do (`applyable` false without errors): skip apply, block nothing."""

    reason: str


Decision = Apply | Block | Noop


def unreadable(message: str) -> Block:
    """The decision for a plan that could not be read at all (a PlanError, a missing file)."""
    return Block((f"the plan could not be read: {message}",), (), error=True)


def decide_apply(plan: Plan, approved: frozenset[str]) -> Decision:
    """Apply only when the plan is trustworthy and every destroy key is in `approved`."""
    keys = destroy_keys(plan)
    unapproved = tuple(k for k in keys if k not in approved)
    untrusted = _untrusted(plan)
    if untrusted:
        return Block(tuple(untrusted), unapproved, error=True)
    if unapproved:
        return Block((f"{len(unapproved)} of {len(keys)} to destroy not approved",), unapproved)
    if _nothing_to_do(plan):
        return Noop("no changes; nothing to apply")
    return Apply(keys)
