"""Redis records of the apply pipeline: blocked applies awaiting approval, the last applied SHA. A lost
(or badly sealed, see plumbing.records) record fails closed: nothing is applied without a
fresh plan and check."""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from core import redis_keys
from core.contract import ApplyConversation, PushRequest
from core.gated import Gated
from core.projects import Project
from core.render.marker import open_sealed, sealed_marker
from plumbing.records import Records

TTL = redis_keys.GATE_TTL
HELD_KIND = "apply-blocked"
MAX_HELD_MARKER = 32 * 1024  # bytes of a blocked comment's sealed record, at most (it shares 65,536)
_MAX_HELD = 4 * 1024 * 1024  # inflated, at most


@dataclass(frozen=True)
class BlockedApply:
    """One project's apply at one pushed SHA, held until /approve-destroy on `number`."""

    push: PushRequest
    project: Project
    number: int  # the merged PR, or the issue plangate opened
    is_pr: bool
    authors: tuple[str, ...]  # a direct push's pusher, committers: who may not approve it (a PR's are asked of GitHub)
    approved_on: str | None  # the PR head SHA whose approvals were checked
    gated: tuple[Gated, ...] = ()  # the changes not approved, each bound to its object, as the comment named them
    comment_id: int | None = None
    blocked_at: str | None = None  # GitHub's time of the comment (or issue) saying so: approvals come after

    def where(self) -> ApplyConversation:
        return ApplyConversation(
            number=self.number, is_pr=self.is_pr, authors=self.authors, approved_on=self.approved_on
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BlockedApply:
        push = data["push"]
        known = {f.name for f in fields(cls)}  # a record of an older version keeps what still means the same
        return cls(
            **{
                **{k: v for k, v in data.items() if k in known},
                "push": PushRequest(**{**push, "authors": tuple(push.get("authors", ()))}),
                "project": Project.from_plain(data["project"]),
                "authors": tuple(data["authors"]),
                "gated": tuple(Gated(**g) for g in data.get("gated", ())),
            }
        )

    def gates(self) -> dict[str, Gated]:
        return {g.key: g for g in self.gated}


def hold(
    push: PushRequest,
    project: Project,
    where: ApplyConversation,
    number: int,
    is_pr: bool,
    gated: list[Gated],
    comment_id: int | None = None,
    blocked_at: str | None = None,
) -> BlockedApply:
    """Record an apply held on `number` (the PR, or an issue plangate opened) until a human answers."""
    return BlockedApply(
        push=push,
        project=project,
        number=number,
        is_pr=is_pr,
        authors=tuple(where.authors),
        approved_on=where.approved_on,
        gated=tuple(gated),
        comment_id=comment_id,
        blocked_at=blocked_at,
    )


def _by_number(repo_id: int, number: int) -> str:
    return redis_keys.blocked(repo_id, number)


def _by_project(repo_id: int, project: str) -> str:
    return redis_keys.blocked_project(repo_id, project)


def save_blocked(records: Records, blocked: BlockedApply) -> None:
    repo_id, name = blocked.push.repo_id, blocked.project.identity
    data = blocked.to_json()
    records.hset(_by_number(repo_id, blocked.number), name, data)
    records.conn.expire(_by_number(repo_id, blocked.number), TTL)
    records.set(_by_project(repo_id, name), data, ex=TTL)


def blocked_on(records: Records, repo_id: int, number: int) -> list[BlockedApply]:
    found = records.hgetall(_by_number(repo_id, number))
    return [BlockedApply.from_json(json.loads(v)) for _, v in sorted(found.items())]


def blocked_for_project(records: Records, repo_id: int, project: str) -> BlockedApply | None:
    """The held apply of the project with this identity, if any."""
    data = records.get_json(_by_project(repo_id, project))
    return BlockedApply.from_json(data) if isinstance(data, dict) else None


def clear_blocked(records: Records, blocked: BlockedApply) -> None:
    repo_id, name = blocked.push.repo_id, blocked.project.identity
    with records.conn.pipeline() as pipe:
        pipe.hdel(_by_number(repo_id, blocked.number), name)
        pipe.delete(_by_project(repo_id, name))
        pipe.execute()


def last_applied(records: Records, repo_id: int, project: str) -> str | None:
    return records.get(redis_keys.applied(repo_id, project))


def last_applied_each(records: Records, repo_id: int, projects: list[str]) -> list[str | None]:
    """`last_applied` of each project identity, in one round trip (a monorepo's hundreds at once)."""
    return records.get_many([redis_keys.applied(repo_id, p) for p in projects])


def set_applied(records: Records, repo_id: int, project: str, sha: str) -> None:
    records.set(redis_keys.applied(repo_id, project), sha)


def _held_context(repo_id: int, number: int) -> str:
    return f"held/{repo_id}/{number}"


def held_marker(blocked: BlockedApply, key: bytes) -> str | None:
    """The blocked comment's first line: the held apply itself, sealed and bound to its PR or issue, so
    that a Redis that lost the record can read it back (`held_from`); None when it would not fit."""
    plain = replace(blocked, comment_id=None, blocked_at=None).to_json().encode()
    packed = base64.b64encode(zlib.compress(plain, 9)).decode("ascii")
    context = _held_context(blocked.push.repo_id, blocked.number)
    found = sealed_marker(HELD_KIND, key, context, sha=blocked.push.after, project=blocked.project.name, held=packed)
    return found if len(found) <= MAX_HELD_MARKER else None


def held_from(body: object, key: bytes, repo_id: int, number: int) -> BlockedApply | None:
    """The held apply a blocked comment on `number` (plangate's own) was written for, when its sealed
    record verifies there; None for anything else."""
    fields_ = open_sealed(body, HELD_KIND, key, _held_context(repo_id, number))
    if fields_ is None or not isinstance(fields_.get("held"), str):
        return None
    try:
        inflater = zlib.decompressobj()
        data = inflater.decompress(base64.b64decode(fields_["held"], validate=True), _MAX_HELD)
        if inflater.unconsumed_tail or not inflater.eof:
            return None
        found = BlockedApply.from_json(json.loads(data))
    except (binascii.Error, zlib.error, ValueError, TypeError, KeyError, RecursionError):
        return None
    return found if found.push.repo_id == repo_id and found.number == number else None
