"""Per-SHA gate state in Redis: the destroy set of the latest plan and the approvals given for it.

Redis is a cache here. The approvals' system of record is the bot's reply comments (hidden
markers); when the Redis copy is missing, or its seal does not verify (see workers.adapters.store.records), it is
rebuilt from them, counting only the bot's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gidgethub.abc import GitHubAPI

from core import keys
from core.approvals import Approval, approvals_from_comments, from_json, to_json
from workers.adapters.store.records import Records

TTL = keys.GATE_TTL


@dataclass(frozen=True)
class DestroysRecord:
    destroys: dict[str, list[str]]  # project identity → destroy keys; every planned project, [] when none
    failed: list[str]  # project identities whose plan failed: nothing there can be approved
    published_at: str | None = None  # GitHub's time the plan comment showed this plan (approvals come after)


def _key(kind: str, repo_id: int, number: int, sha: str) -> str:
    return keys.approvals(repo_id, number, sha) if kind == "approvals" else keys.destroys(repo_id, number, sha)


def save_destroys(records: Records, repo_id: int, number: int, sha: str, record: DestroysRecord) -> None:
    payload = json.dumps({"destroys": record.destroys, "failed": record.failed, "published_at": record.published_at})
    records.set(_key("destroys", repo_id, number, sha), payload, ex=TTL)


def load_destroys(records: Records, repo_id: int, number: int, sha: str) -> DestroysRecord | None:
    data = records.get_json(_key("destroys", repo_id, number, sha))
    if not isinstance(data, dict):
        return None
    return DestroysRecord(destroys=data["destroys"], failed=data["failed"], published_at=data.get("published_at"))


def start_sha(records: Records, repo_id: int, number: int, sha: str) -> None:
    """A SHA seen for the first time has no approvals: say so, sparing a comment listing later."""
    records.set(_key("approvals", repo_id, number, sha), "[]", nx=True, ex=TTL)


def cached_approvals(records: Records, repo_id: int, number: int, sha: str) -> list[Approval]:
    text = records.get(_key("approvals", repo_id, number, sha))
    try:
        return from_json(text) if text is not None else []
    except ValueError:
        return []


def add_approval(records: Records, repo_id: int, number: int, sha: str, known: list[Approval], new: Approval) -> None:
    records.set(_key("approvals", repo_id, number, sha), to_json([*known, new]), ex=TTL)


async def load_approvals(
    records: Records, gh: GitHubAPI, *, repo: str, repo_id: int, number: int, sha: str, bot_login: str
) -> list[Approval]:
    """From Redis when the record's seal verifies, else rebuilt from the bot's own reply markers on the PR."""
    key = _key("approvals", repo_id, number, sha)
    text = records.get(key)
    if text is not None:
        try:
            return from_json(text)
        except ValueError:
            pass
    comments = [c async for c in gh.getiter(f"/repos/{repo}/issues/{number}/comments?per_page=100")]
    rebuilt = approvals_from_comments(comments, bot_login, sha)
    records.set(key, to_json(rebuilt), ex=TTL)
    return rebuilt
