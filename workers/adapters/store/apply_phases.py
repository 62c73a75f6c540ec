"""Where each project's apply run stands, recorded before anything is reported: a run that dies (or is
stopped by an outage) is picked up by its next try, or by the finish job, from what really happened.

planning  → nothing applied yet: a re-run plans, gates and applies afresh.
applying  → `terraform apply` may have changed the state: never run again; reported as died.
applied   → the outcome and its comment are known: a re-run only reports them.
reported  → done.
A run is one RQ job (its id), re-runs included; a held apply re-run by a human is a new job.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from core import redis_keys
from core.apply_outcome import ApplyOutcome
from plumbing.records import Records

Name = Literal["planning", "applying", "applied", "reported"]


@dataclass(frozen=True)
class Phase:
    name: Name
    outcome: ApplyOutcome | None = None  # for applied/reported: the project's outcome
    body: str = ""  # for applied: the result comment, kept until it is posted
    close_issue: bool = False  # for applied: the issue the apply was held on is closed once it is posted
    detail: str = ""  # for applied/reported, when the apply failed: its masked output, for the failure's issue


def _from_json(found: dict[str, Any]) -> Phase:
    outcome = ApplyOutcome.read(found["outcome"]) if found.get("outcome") else None
    body, detail = str(found.get("body", "")), str(found.get("detail", ""))
    return Phase(found["name"], outcome, body, bool(found.get("close_issue")), detail)


def read(records: Records, run_id: str) -> Phase | None:
    found = records.get_json(redis_keys.apply_phase(run_id))
    return _from_json(found) if isinstance(found, dict) else None


def read_many(records: Records, run_ids: list[str]) -> list[Phase | None]:
    """`read` of each run, in one round trip."""
    found = records.get_many([redis_keys.apply_phase(r) for r in run_ids])
    return [_from_json(json.loads(text)) if text else None for text in found]


def write(records: Records, run_id: str, phase: Phase) -> None:
    fields = {
        "name": phase.name,
        "outcome": phase.outcome.stored() if phase.outcome else "",
        "body": phase.body,
        "close_issue": phase.close_issue,
        "detail": phase.detail,
    }
    records.set(redis_keys.apply_phase(run_id), json.dumps(fields), ex=redis_keys.APPLY_PHASE_TTL)
