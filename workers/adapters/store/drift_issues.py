"""Drift's Redis records: the targets the minute's tick reads, and each project's open drift issue
(both ways: project → issue number, for the next report; issue → target and project, for `/plan` there).

Plain values, not sealed: none of them can move the gate. A lost record costs one issue search on GitHub.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import redis

from core import redis_keys
from core.drift_schedule import DriftTarget
from core.projects import Project


def save_targets(conn: redis.Redis, targets: list[DriftTarget]) -> None:
    conn.set(redis_keys.DRIFT_TARGETS, json.dumps([t.to_plain() for t in targets]))


def load_targets(conn: redis.Redis) -> list[DriftTarget]:
    """The targets the last refresh stored; none before the first."""
    raw = conn.get(redis_keys.DRIFT_TARGETS)
    return [DriftTarget.from_plain(t) for t in json.loads(raw)] if isinstance(raw, bytes) else []


def issue_of(conn: redis.Redis, repo_id: int, project: str) -> int | None:
    """The number of the project's open drift issue, when this Redis knows it."""
    raw = conn.get(redis_keys.drift_issue(repo_id, project))
    return int(raw) if isinstance(raw, bytes) else None


def remember_issue(conn: redis.Redis, repo_id: int, project: str, number: int) -> None:
    conn.set(redis_keys.drift_issue(repo_id, project), number)


def watch(conn: redis.Redis, target: DriftTarget, project: Project, number: int) -> None:
    """Issue `number` reports `project`'s drift: `/plan` there checks it again."""
    watched = {"target": target.to_plain(), "project": asdict(project)}
    conn.set(redis_keys.drift_by_issue(target.repo_id, number), json.dumps(watched))


def watched(conn: redis.Redis, repo_id: int, number: int) -> dict[str, Any] | None:
    """What issue `number` reports (`target`, `project`, as `watch` wrote them); None for any other issue."""
    raw = conn.get(redis_keys.drift_by_issue(repo_id, number))
    found: dict[str, Any] | None = json.loads(raw) if isinstance(raw, bytes) else None
    return found


def forget_issue(conn: redis.Redis, repo_id: int, project: str, number: int) -> None:
    """The drift was resolved and its issue closed: both records go."""
    conn.delete(redis_keys.drift_issue(repo_id, project), redis_keys.drift_by_issue(repo_id, number))
