"""What an approval can cover (pure): a plan's gated changes, each named by a key and bound to an object.

A gated change is a destroy (a delete, either replace order, a deposed object: core.plan) or code that
the apply would run beyond the planned resources' providers (a provisioner, an `external` program,
providers shipped in the repository: core.plan.CodeRun). An approval names (project identity, key)
*and* the object it saw: the digest of what terraform knew of the condemned object before the change,
or of the code that would run. So when a re-plan makes the same address mean another object (the
backend moved from staging to production), or the same provisioner run other code, the approval given
for the old one no longer covers it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from core.plan import Plan, ResourceChange
from core.plan_code import CodeRun

CODE_PREFIX = "run "  # every code run's key starts so; a terraform address never does
LIMIT_PREFIX = "limit "  # a limit's key ("limit max_destroys"); no address starts so either
CHANGE_ACTIONS = ("create", "update", "read")  # a non-destroy change's key is "ACTION ADDRESS"
Kind = Literal["destroy", "code", "change", "limit"]
KINDS: tuple[Kind, ...] = ("destroy", "change", "limit", "code")


@dataclass(frozen=True)
class Gated:
    """One gated change of one project's plan."""

    key: str  # a destroy key (destroy_key), or a code run's key ("run …")
    object: str  # digest of the object destroyed, or of the code that would run: what an approval binds to
    previous: str | None = None  # the address before a move (a `moved` block, count/for_each added)
    what: str = ""  # a code run or a limit, for people ("local-exec provisioner of terraform_data.x (at create)")
    action: str = ""  # a destroy's or change's action class (core.plan); "" for code, limits, older records

    @property
    def runs_code(self) -> bool:
        return is_code_key(self.key)

    @property
    def kind(self) -> Kind:
        return kind_of(self.key)

    @property
    def address(self) -> str:
        """The address a destroy or change acts on (without its action prefix or deposed key)."""
        key = self.key.split(" ", 1)[1] if self.kind == "change" else self.key
        return key.split(" (deposed ", 1)[0]


Gates = Mapping[str, Mapping[str, Gated]]  # project identity → key → gated change, of one published plan


def is_code_key(key: str) -> bool:
    return key.startswith(CODE_PREFIX)


def kind_of(key: str) -> Kind:
    """What a gated key names, by its prefix: every key without one is a destroy's (fails closed)."""
    if key.startswith(CODE_PREFIX):
        return "code"
    if key.startswith(LIMIT_PREFIX):
        return "limit"
    if key.split(" ", 1)[0] in CHANGE_ACTIONS and " " in key:
        return "change"
    return "destroy"


def change_key(change: ResourceChange) -> str:
    return f"{change.rule_action} {change.address}"


def destroy_key(change: ResourceChange) -> str:
    """What an approval names: the address, plus the deposed key when a leftover object is deleted."""
    return f"{change.address} (deposed {change.deposed})" if change.deposed else change.address


def destroy_keys(plan: Plan) -> tuple[str, ...]:
    return tuple(dict.fromkeys(destroy_key(c) for c in plan.destroys))


def plan_gates(plan: Plan, code_runs: Iterable[CodeRun] = (), *, gate_code: bool = True) -> dict[str, Gated]:
    """Every gated change of one project's plan, destroys first in plan order; `gate_code` False: the
    default branch's `.plangate.yml` turned the code-at-apply gate off for this project."""
    gates: dict[str, Gated] = {}
    for change in plan.destroys:
        key = destroy_key(change)
        previous = change.previous_address if change.is_moved else None
        gates.setdefault(key, Gated(key, change.object_digest, previous, action=change.action_class))
    if gate_code:
        for run in code_runs:
            gates.setdefault(run.key, Gated(run.key, run.digest, what=run.what))
    return gates


def counts(gates: Mapping[str, Gated]) -> dict[Kind, int]:
    """How many of `gates` there are of each kind (every kind, 0 when none)."""
    out = dict.fromkeys(KINDS, 0)
    for gated in gates.values():
        out[gated.kind] += 1
    return out


def plan_digest(code_sha: str, identity: str, gates: Mapping[str, Gated]) -> str:
    """One project's plan as an approval sees it: the commit whose code was planned (the head, or
    GitHub's test merge), the project, and every gated change with its object."""
    doc = [code_sha, identity, sorted([g.key, g.object, g.previous] for g in gates.values())]
    return hashlib.sha256(json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode()).hexdigest()


def published_digest(plans: Mapping[str, str]) -> str:
    """A published plan (several projects) from each project's plan_digest: what an approval was given
    on, and what the "Approve" button's page showed."""
    doc = sorted(plans.items())
    return hashlib.sha256(json.dumps(doc, separators=(",", ":"), ensure_ascii=True).encode()).hexdigest()


def to_plain(gates: Mapping[str, Gated]) -> dict[str, list[str | None]]:
    """JSON-ready: key → [object, previous, what, action]."""
    return {g.key: [g.object, g.previous, g.what or None, g.action or None] for g in gates.values()}


def from_plain(data: object) -> dict[str, Gated]:
    """`to_plain` read back; ValueError when it is not one (a record of another version counts for nothing).
    A record without actions (written before change_rules) reads with none: rules then take its destroys
    for any destroy action (core.destroy_rules), which can only ask for more."""
    if not isinstance(data, dict):
        raise ValueError("gated changes must be a mapping")
    out: dict[str, Gated] = {}
    for key, value in data.items():
        if not isinstance(key, str) or not key or not isinstance(value, list) or len(value) not in (3, 4):
            raise ValueError("a gated change must be key → [object, previous, what, action]")
        obj, previous, what, action = [*value, None][:4]
        if not isinstance(obj, str) or not all(v is None or isinstance(v, str) for v in (previous, what, action)):
            raise ValueError("a gated change's object must be a string")
        out[key] = Gated(key, obj, previous, what or "", action or "")
    return out
