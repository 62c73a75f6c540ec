"""The gate's verdict on each run of a published plan (pure): what a run page shows under "gate".

A PR's plan is judged as a whole (one `plangate/destroy` per commit), so every project's run carries the
same state and description, the status plangate reported; each run then lists its own gated changes, one
verdict per change: approved, waiting, never (a `never` rule holds it), or voided (an approval was given
for another object there). A page is read by people deciding what to approve, so it says no more than the
gate decided: a change counts as approved only when the coverage says so.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.approvals import Coverage
from core.gated import Gated, Gates
from core.runs import RunGate, Verdict

FAILED_NOTE = "not judged: a plan at this commit failed, so nothing here can be approved until it plans"


def verdict(identity: str, gated: Gated, coverage: Coverage | None) -> Verdict:
    """One gated change of project `identity` as `coverage` judged it; None: not judged (fails closed)."""
    what = f"{gated.what}: " if gated.what else ""
    if coverage is None:
        return Verdict(gated.key, gated.kind, "waiting", what + FAILED_NOTE)
    pair = (identity, gated.key)
    people = tuple(coverage.approved_by.get(pair, ()))
    rule = coverage.notes.get(pair)
    if pair in coverage.never:
        state = "never"
    elif pair in coverage.approved_pairs:
        state = "approved"
    elif pair in coverage.voided:
        state = "voided"
    else:
        state = "waiting"
    return Verdict(gated.key, gated.kind, state, what + (rule or _default_note(state)), people)


def _default_note(state: str) -> str:
    """What a change no rule matches needs (one approval), in the state it is in."""
    if state == "approved":
        return "approved"
    if state == "voided":
        return "approved before for another object (or other code): needs 1 approval of this plan"
    return "needs 1 approval"


def run_gates(
    gates: Gates,
    coverage: Coverage | None,
    status: tuple[str, str],
    *,
    at: float,
    identities: tuple[str, ...] = (),
) -> dict[str, RunGate]:
    """identity → its run's gate, for every project in `gates` and in `identities` (a project whose plan
    failed has no gates: its run gets the status and no verdicts). `status`: plangate/destroy's (state,
    description) as reported; `coverage`: the approvals against `gates`, None when they were not judged
    (a plan failed, or nothing is gated)."""
    state, description = status
    out: dict[str, RunGate] = {}
    for identity in dict.fromkeys([*gates, *identities]):
        keys: Mapping[str, Gated] = gates.get(identity, {})
        verdicts = tuple(verdict(identity, gated, coverage) for gated in keys.values())
        out[identity] = RunGate(state, description, verdicts, at)
    return out
