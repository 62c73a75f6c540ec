"""Redis records of the apply pipeline: blocked applies awaiting approval, the last applied SHA,
applies in flight. A lost (or badly sealed, see workers.adapters.store.records) record fails closed: nothing is
applied without a fresh plan and check."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from core import keys
from core.contract import PushRequest
from core.projects import Project, project_identity
from workers.adapters.store.records import Records

TTL = keys.GATE_TTL


@dataclass(frozen=True)
class BlockedApply:
    """One project's apply at one pushed SHA, held until /approve-destroy on `number`."""

    push: dict[str, Any]  # the PushRequest, as plain values
    project: dict[str, Any]  # the Project, as plain values
    number: int  # the merged PR, or the issue plangate opened
    is_pr: bool
    authors: list[str]  # who may not approve it (unless self-approval is allowed): PR author, or pusher and committers
    approved_on: str | None  # the PR head SHA whose approvals were checked
    destroys: list[str] = field(default_factory=list)
    comment_id: int | None = None
    blocked_at: str | None = None  # GitHub's time of the comment (or issue) saying so: approvals come after

    def push_request(self) -> PushRequest:
        return PushRequest(**{**self.push, "authors": tuple(self.push.get("authors", ()))})

    def project_of(self) -> Project:
        return Project(**self.project)


def hold(
    push: Any,
    project: Any,
    where: Any,
    number: int,
    is_pr: bool,
    destroys: list[str],
    comment_id: int | None = None,
    blocked_at: str | None = None,
) -> BlockedApply:
    """Record an apply held on `number` (the PR, or an issue plangate opened) until a human answers."""
    return BlockedApply(
        push=asdict(push),
        project=asdict(project),
        number=number,
        is_pr=is_pr,
        authors=list(where.authors),
        approved_on=where.approved_on,
        destroys=destroys,
        comment_id=comment_id,
        blocked_at=blocked_at,
    )


def _by_number(repo_id: int, number: int) -> str:
    return keys.blocked(repo_id, number)


def _by_project(repo_id: int, project: str) -> str:
    return keys.blocked_project(repo_id, project)


def _identity(blocked: BlockedApply) -> str:
    p = blocked.project
    return project_identity(str(p["name"]), str(p.get("workspace", "default")), str(p["dir"]))


def save_blocked(records: Records, blocked: BlockedApply) -> None:
    repo_id, name = int(blocked.push["repo_id"]), _identity(blocked)
    data = json.dumps(asdict(blocked))
    records.hset(_by_number(repo_id, blocked.number), name, data)
    records.conn.expire(_by_number(repo_id, blocked.number), TTL)
    records.set(_by_project(repo_id, name), data, ex=TTL)


def blocked_on(records: Records, repo_id: int, number: int) -> list[BlockedApply]:
    found = records.hgetall(_by_number(repo_id, number))
    return [BlockedApply(**json.loads(v)) for _, v in sorted(found.items())]


def blocked_for_project(records: Records, repo_id: int, project: str) -> BlockedApply | None:
    """The held apply of the project with this identity, if any."""
    data = records.get_json(_by_project(repo_id, project))
    return BlockedApply(**data) if isinstance(data, dict) else None


def clear_blocked(records: Records, blocked: BlockedApply) -> None:
    repo_id, name = int(blocked.push["repo_id"]), _identity(blocked)
    with records.conn.pipeline() as pipe:
        pipe.hdel(_by_number(repo_id, blocked.number), name)
        pipe.delete(_by_project(repo_id, name))
        pipe.execute()


def last_applied(records: Records, repo_id: int, project: str) -> str | None:
    return records.get(keys.applied(repo_id, project))


def set_applied(records: Records, repo_id: int, project: str, sha: str) -> None:
    records.set(keys.applied(repo_id, project), sha)


def applying_key(repo_id: int, sha: str, project: str) -> str:
    """Present while `terraform apply` runs: if the job dies, the finish job finds it and says so."""
    return keys.applying(repo_id, sha, project)
