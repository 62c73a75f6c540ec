"""Open PRs' latest published plans, indexed by the project identities they cover (sealed), and the one
re-plan per PR that may be pending at a time: what a push to the apply branch reads to re-plan the PRs
it made stale (workers.flows.stale_plans)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import redis

from core import redis_keys
from plumbing.records import Records

TTL = redis_keys.PR_PLANS_TTL
PENDING_TTL = redis_keys.REPLAN_PENDING_TTL


@dataclass(frozen=True)
class PlannedPR:
    """An open PR's latest published plan: enough to plan it again."""

    number: int
    sha: str
    author: str
    fork: bool
    projects: list[str]  # identities


def _index(repo_id: int) -> str:
    return redis_keys.pr_plans(repo_id)


def _pending(repo_id: int, number: int) -> str:
    return redis_keys.replan_pending(repo_id, number)


def remember(records: Records, repo_id: int, planned: PlannedPR) -> None:
    records.hset(_index(repo_id), str(planned.number), json.dumps(asdict(planned)))
    records.conn.expire(_index(repo_id), TTL)


def affected(records: Records, repo_id: int, identities: set[str], exclude: int | None) -> list[PlannedPR]:
    """Open PRs whose latest plan covers one of `identities`, except `exclude` (the PR just merged)."""
    found = []
    for text in records.hgetall(_index(repo_id)).values():
        planned = PlannedPR(**json.loads(text))
        if planned.number != exclude and identities & set(planned.projects):
            found.append(planned)
    return sorted(found, key=lambda p: p.number)


def claim(conn: redis.Redis, repo_id: int, number: int) -> bool:
    """True when no re-plan of this PR is pending yet (this push gets to enqueue it)."""
    return bool(conn.set(_pending(repo_id, number), "1", nx=True, ex=PENDING_TTL))


def release(conn: redis.Redis, repo_id: int, number: int) -> None:
    """The re-plan started: a later push may enqueue the next one."""
    conn.delete(_pending(repo_id, number))
