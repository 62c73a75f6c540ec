"""Plan + approvals → apply or block (pure). Everything unexpected blocks: the gate fails closed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from core.gated import Gated, counts, destroy_keys, plan_gates
from core.plan import Plan, ResourceChange

VerdictKind = Literal["apply", "blocked", "error"]


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
    """Apply the saved plan; `approved` are the approved gated keys it carries out (destroys, code runs)."""

    approved: tuple[str, ...]


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


def decide_apply(plan: Plan, approved: frozenset[str], gates: Mapping[str, Gated] | None = None) -> Decision:
    """Apply only when the plan is trustworthy and every gated change is in `approved`. `gates`: this
    plan's gated changes (core.gated.plan_gates: its destroys, and the code it would run at apply; with
    core.change_rules' changes and limits); by default its destroys alone."""
    gates = plan_gates(plan) if gates is None else gates
    keys = tuple(gates)
    unapproved = tuple(k for k in keys if k not in approved)
    untrusted = _untrusted(plan)
    ungated = [k for k in destroy_keys(plan) if k not in gates]
    if ungated:  # the caller's gates are not this plan's: never apply on them
        untrusted.append(f"{len(ungated)} destroys of this plan were not checked against the approvals")
    if untrusted:
        return Block(tuple(untrusted), unapproved, error=True)
    if unapproved:
        return Block((_not_approved(gates, unapproved),), unapproved)
    if _nothing_to_do(plan):
        return Noop("no changes; nothing to apply")
    return Apply(keys)


_PHRASES = {
    "destroy": "to destroy",
    "change": "gated changes (change_rules)",
    "code": "that run code at apply",
    "limit": "limits passed (change_limits)",
}


def _not_approved(gates: Mapping[str, Gated], unapproved: tuple[str, ...]) -> str:
    total = counts(gates)
    still = counts({k: gates[k] for k in unapproved})
    parts = [f"{still[kind]} of {n} {_PHRASES[kind]}" for kind, n in total.items() if n]
    return " and ".join(parts) + " not approved"
