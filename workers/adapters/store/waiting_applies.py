"""Who waits on whom: the applies a project's failed, held or lost apply stopped (core.apply_order), so
that when that project later applies successfully at the branch the dependents it held are applied too.

Sealed like the held applies (plumbing.records): a record names where approvals are read
from. A lost record fails closed: its dependents stay unapplied until a new push or `/plan` on the
merged PR runs them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core import redis_keys
from core.contract import ApplyConversation, PushRequest
from core.projects import Project
from plumbing.records import Records

TTL = redis_keys.GATE_TTL


@dataclass(frozen=True)
class WaitingApply:
    """`project`'s apply at `push.after`, stopped because `dependency` did not apply there; `waits`: the
    push's order (core.apply_order.waits), minus the dependencies applied since."""

    push: PushRequest
    project: Project
    where: ApplyConversation
    dependency: str
    waits: dict[str, tuple[str, ...]]

    def field(self) -> str:
        return f"{self.push.after}:{self.project.identity}"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WaitingApply:
        push, project, where = data["push"], data["project"], data["where"]
        return cls(
            push=PushRequest(**{**push, "authors": tuple(push.get("authors", ()))}),
            project=Project.from_plain(project),
            where=ApplyConversation(**{**where, "authors": tuple(where.get("authors", ()))}),
            dependency=str(data["dependency"]),
            waits={str(k): tuple(v) for k, v in data["waits"].items()},
        )


def _key(repo_id: int, dependency: str) -> str:
    return redis_keys.waiting_applies(repo_id, dependency)


def record(records: Records, waiting: WaitingApply) -> None:
    """Remember that `waiting` is held by its dependency (once per SHA and project, however often said)."""
    key = _key(waiting.push.repo_id, waiting.dependency)
    records.hset(key, waiting.field(), waiting.to_json())
    records.conn.expire(key, TTL)


def held_by(records: Records, repo_id: int, dependency: str) -> list[WaitingApply]:
    """The applies `dependency` holds, in a stable order (a record that does not unseal counts for nothing)."""
    found = [WaitingApply.from_json(json.loads(text)) for text in records.hgetall(_key(repo_id, dependency)).values()]
    return sorted(found, key=lambda w: (w.push.after, w.project.name))


def forget(records: Records, released: list[WaitingApply]) -> None:
    """Drop the records of applies enqueued again."""
    for waiting in released:
        records.conn.hdel(_key(waiting.push.repo_id, waiting.dependency), waiting.field())


def _success_key(repo_id: int, dependency: str) -> str:
    return redis_keys.waiting_applies(repo_id, dependency) + ":last-success"


def succeeded(records: Records, repo_id: int, dependency: str, sha: str) -> None:
    """`dependency` applied successfully at `sha` (a dependent recorded after its release reads it)."""
    records.set(_success_key(repo_id, dependency), sha, ex=TTL)


def last_success(records: Records, repo_id: int, dependency: str) -> str | None:
    """The commit `dependency` last applied successfully at, as `succeeded` said it."""
    return records.get(_success_key(repo_id, dependency))


def save_order(records: Records, repo_id: int, sha: str, waits: Mapping[str, Sequence[str]]) -> None:
    """The push's order (core.apply_order.waits), kept for an apply of it run again without it (a held
    apply's approval or `/plan`): it must still wait on what did not apply at that SHA."""
    plain = {name: list(deps) for name, deps in waits.items()}
    records.set(redis_keys.apply_order(repo_id, sha), json.dumps(plain), ex=TTL)


def order_at(records: Records, repo_id: int, sha: str) -> dict[str, tuple[str, ...]]:
    """The order `save_order` kept for the push of `sha`; empty when there is none (no dependencies, or
    Redis lost it)."""
    data = records.get_json(redis_keys.apply_order(repo_id, sha))
    if not isinstance(data, dict):
        return {}
    return {str(k): tuple(str(d) for d in v) for k, v in data.items() if isinstance(v, list)}
