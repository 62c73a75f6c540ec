"""Projects whose last apply on the apply branch failed: one record per project (its identity), naming
the SHA that failed and the issue that says so, until an apply of the project succeeds.

Plain values, not sealed: a record only keeps `plangate/apply` red and points `/apply` at a project,
whose apply is planned afresh and gated like any push. A lost record costs the reminder, never a check.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import redis

from core import redis_keys
from core.projects import Project


@dataclass(frozen=True)
class FailedApply:
    project: Project
    sha: str  # the pushed commit whose apply failed
    number: int  # the issue that reports it
    branch: str  # the apply branch, as the banner names it
    authors: tuple[str, ...] = ()  # the failed push's own authors: never approvers of the apply that fixes it
    repo: str = ""  # owner/name and the issue's page, for the status page
    url: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> FailedApply:
        data = json.loads(text)
        return cls(
            project=Project.from_plain(data["project"]),
            sha=str(data["sha"]),
            number=int(data["number"]),
            branch=str(data["branch"]),
            authors=tuple(str(a) for a in data.get("authors", ())),
            repo=str(data.get("repo", "")),
            url=str(data.get("url", "")),
        )


def record(conn: redis.Redis, repo_id: int, failed: FailedApply) -> None:
    conn.hset(redis_keys.failed_applies(repo_id), failed.project.identity, failed.to_json())


def clear(conn: redis.Redis, repo_id: int, identity: str) -> None:
    conn.hdel(redis_keys.failed_applies(repo_id), identity)


def of_project(conn: redis.Redis, repo_id: int, identity: str) -> FailedApply | None:
    raw = conn.hget(redis_keys.failed_applies(repo_id), identity)
    return FailedApply.from_json(raw) if isinstance(raw, bytes) else None


def of_repo(conn: redis.Redis, repo_id: int) -> list[FailedApply]:
    """Every project of the repository recorded failed, by name."""
    raw = conn.hgetall(redis_keys.failed_applies(repo_id))
    found = [FailedApply.from_json(text) for text in raw.values()]
    return sorted(found, key=lambda f: (f.project.name, f.project.identity))


def on_issue(conn: redis.Redis, repo_id: int, number: int) -> FailedApply | None:
    """The failure issue `number` reports, if it is one."""
    return next((f for f in of_repo(conn, repo_id) if f.number == number), None)
