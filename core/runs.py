"""What a run page shows, as plain data (pure): who ran what where, the plan as a resource diff, and the
gate's verdict on each gated change. Workers write these (plumbing.run_store), the web reads them.

A run is one project's terraform pipeline in one job: a PR plan, a merge-time apply, a drift check, a
merge group's plan, an `/accept-drift`. Its id is derived from the job and the project, so a job that RQ
runs again after its worker died reuses its run (and the page shows the last attempt), while a new job
(a re-plan, a new push) gets a new one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

KINDS = ("plan", "apply", "drift", "merge-group", "accept-drift")
ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")  # run_id makes 24; links and pages accept no other characters
VERDICT_STATES = ("approved", "waiting", "never", "voided")


def run_id(job_id: str, identity: str) -> str:
    """The id of the run of project `identity` in job `job_id`: 24 URL-safe characters."""
    digest = hashlib.sha256(f"{job_id}\0{identity}".encode()).hexdigest()
    return digest[:24]


def valid_id(text: str) -> bool:
    return ID_PATTERN.fullmatch(text) is not None


@dataclass(frozen=True)
class RunHead:
    """Where a run ran and how it ended; `ended`/`outcome` stay None while it runs."""

    id: str
    kind: str  # one of KINDS
    repo: str  # owner/name
    repo_id: int
    sha: str  # the commit the run is about (a PR's head, the pushed commit)
    project: str  # name
    dir: str
    workspace: str
    number: int | None = None  # PR or issue
    code_sha: str | None = None  # the commit whose code ran, when not `sha` (a test merge, a deleted project)
    tool: str = "terraform"
    started: float = 0.0
    ended: float | None = None
    outcome: str | None = None  # e.g. "planned", "no changes", "failed", "applied", "apply failed", "blocked"
    ok: bool | None = None  # the outcome is a success (green) or not (red); None while running
    summary: str = ""  # "2 to add, 0 to change, 1 to destroy", or why it failed (masked)

    @property
    def running(self) -> bool:
        return self.ended is None


@dataclass(frozen=True)
class Attribute:
    """One attribute of a resource, before → after, as text terraform would show (sensitive and unknown
    values already marked, long values not yet folded: the page folds)."""

    path: str
    before: str | None  # None: the attribute does not exist before (a create)
    after: str | None  # None: it does not exist after (a delete)
    forces_replacement: bool = False  # terraform's replace_paths name it (or a part of it)


@dataclass(frozen=True)
class ResourceDiff:
    address: str
    action: str  # core.plan.ACTION_CLASSES
    gated: bool = False  # a destroy, or a change a change rule gates
    previous_address: str | None = None
    reason: str | None = None
    attributes: tuple[Attribute, ...] = ()
    deposed: str | None = None  # the deposed object's key, when the change deletes a leftover object
    attributes_omitted: int = 0  # attributes left out (core.run_plan's caps)


@dataclass(frozen=True)
class RunPlan:
    """The plan drawn as a diff: every changed resource (no-ops left out), at most `shown` of them with
    attributes; `omitted` counts those left out beyond the cap."""

    resources: tuple[ResourceDiff, ...]
    omitted: int = 0
    outputs_changed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    """The gate on one gated change: its state, the rule and what it still needs, who approved it."""

    key: str  # core.gated key: an address, "run …", "limit …", "update ADDRESS"
    kind: str  # core.gated.Kind
    state: str  # VERDICT_STATES
    note: str = ""  # which rule, approvals given and still needed
    approvers: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunGate:
    """The gate as plangate decided it last for this run's plan (`state` a commit status state)."""

    state: str
    description: str
    verdicts: tuple[Verdict, ...] = ()
    at: float = 0.0


def to_plain(value: RunHead | RunPlan | RunGate) -> dict[str, Any]:
    return asdict(value)


def head_from(plain: dict[str, Any]) -> RunHead:
    return RunHead(**plain)


def masked_plan(plan: RunPlan, mask: Callable[[str], str]) -> RunPlan:
    """`plan` with `mask` over every text it shows: addresses, attribute paths and values, outputs."""

    def maybe(text: str | None) -> str | None:
        return None if text is None else mask(text)

    resources = tuple(
        replace(
            r,
            address=mask(r.address),
            previous_address=maybe(r.previous_address),
            attributes=tuple(
                replace(a, path=mask(a.path), before=maybe(a.before), after=maybe(a.after)) for a in r.attributes
            ),
        )
        for r in plan.resources
    )
    return replace(plan, resources=resources, outputs_changed=tuple(mask(o) for o in plan.outputs_changed))


def plan_from(plain: dict[str, Any]) -> RunPlan:
    resources = tuple(
        ResourceDiff(**{**r, "attributes": tuple(Attribute(**a) for a in r.get("attributes", ()))})
        for r in plain.get("resources", ())
    )
    return RunPlan(resources, plain.get("omitted", 0), tuple(plain.get("outputs_changed", ())))


def gate_from(plain: dict[str, Any]) -> RunGate:
    verdicts = tuple(Verdict(**{**v, "approvers": tuple(v.get("approvers", ()))}) for v in plain.get("verdicts", ()))
    return RunGate(plain["state"], plain["description"], verdicts, plain.get("at", 0.0))


@dataclass(frozen=True)
class Line:
    """One line of a run's output as stored: its stream id (the resume point) and masked text."""

    id: str
    text: str


@dataclass(frozen=True)
class Stored:
    """Everything a run page reads of one run."""

    head: RunHead
    plan: RunPlan | None = None
    gate: RunGate | None = None
    lines: tuple[Line, ...] = ()
