"""Per-SHA gate state in Redis: the destroy set of the latest plan and the approvals given for it.

Redis is a cache here. The approvals' system of record is the bot's reply comments (hidden
markers); when the Redis copy is missing it is rebuilt from them, counting only the bot's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import redis
from gidgethub.abc import GitHubAPI

from workers.approvals import Approval, approvals_from_comments, from_json, to_json

TTL = 90 * 24 * 3600


@dataclass(frozen=True)
class DestroysRecord:
    destroys: dict[str, list[str]]  # project → destroy keys; every planned project, [] when none
    failed: list[str]  # projects whose plan failed: nothing there can be approved


def _key(kind: str, repo_id: int, number: int, sha: str) -> str:
    return f"plangate:{kind}:{repo_id}:{number}:{sha}"


def save_destroys(conn: redis.Redis, repo_id: int, number: int, sha: str, record: DestroysRecord) -> None:
    payload = json.dumps({"destroys": record.destroys, "failed": record.failed})
    conn.set(_key("destroys", repo_id, number, sha), payload, ex=TTL)


def load_destroys(conn: redis.Redis, repo_id: int, number: int, sha: str) -> DestroysRecord | None:
    raw = conn.get(_key("destroys", repo_id, number, sha))
    if not isinstance(raw, bytes):
        return None
    data = json.loads(raw)
    return DestroysRecord(destroys=data["destroys"], failed=data["failed"])


def start_sha(conn: redis.Redis, repo_id: int, number: int, sha: str) -> None:
    """A SHA seen for the first time has no approvals: say so, sparing a comment listing later."""
    conn.set(_key("approvals", repo_id, number, sha), "[]", nx=True, ex=TTL)


def cached_approvals(conn: redis.Redis, repo_id: int, number: int, sha: str) -> list[Approval]:
    raw = conn.get(_key("approvals", repo_id, number, sha))
    try:
        return from_json(raw) if isinstance(raw, bytes) else []
    except ValueError:
        return []


def add_approval(conn: redis.Redis, repo_id: int, number: int, sha: str, known: list[Approval], new: Approval) -> None:
    conn.set(_key("approvals", repo_id, number, sha), to_json([*known, new]), ex=TTL)


async def load_approvals(
    conn: redis.Redis, gh: GitHubAPI, *, repo: str, repo_id: int, number: int, sha: str, bot_login: str
) -> list[Approval]:
    """From Redis, else rebuilt from the bot's own reply markers on the PR (and cached again)."""
    key = _key("approvals", repo_id, number, sha)
    raw = conn.get(key)
    if isinstance(raw, bytes):
        try:
            return from_json(raw)
        except ValueError:
            pass
    comments = [c async for c in gh.getiter(f"/repos/{repo}/issues/{number}/comments?per_page=100")]
    rebuilt = approvals_from_comments(comments, bot_login, sha)
    conn.set(key, to_json(rebuilt), ex=TTL)
    return rebuilt
