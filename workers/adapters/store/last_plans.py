"""The PR's last published plans, per project (sealed): the next push carries forward those whose
inputs did not change. A record that is missing or does not verify carries nothing: all is planned."""

from __future__ import annotations

import json
from collections.abc import Mapping

from core import redis_keys
from core.inputs import LastPlan
from plumbing.records import Records


def save(records: Records, repo_id: int, pr: int, sha: str, plans: Mapping[str, LastPlan]) -> None:
    entries = {identity: [p.fingerprint, p.job_id, p.planned_at] for identity, p in plans.items()}
    records.set(
        redis_keys.last_plans(repo_id, pr), json.dumps({"sha": sha, "projects": entries}), ex=redis_keys.PLAN_RESULT_TTL
    )


def load(records: Records, repo_id: int, pr: int) -> dict[str, LastPlan]:
    data = records.get_json(redis_keys.last_plans(repo_id, pr))
    if not isinstance(data, dict) or not isinstance(data.get("projects"), dict):
        return {}
    return {
        identity: LastPlan(*entry)
        for identity, entry in data["projects"].items()
        if isinstance(entry, list) and len(entry) == 3 and all(isinstance(v, str) for v in entry)
    }
