"""Per-SHA gate state in Redis: the gated changes of the latest published plan and the approvals given for it.

Redis is a cache here. The approvals' system of record is the bot's reply comments, each holding a
sealed marker (core.approvals). When the Redis copy is missing, or its seal does not verify (see
plumbing.records), approvals are rebuilt from those markers alone: a marker that does
not verify, or a bot comment someone else changed (workers.adapters.store.written), counts for nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core import redis_keys
from core.approval_markers import approvals_from_comments
from core.approvals import Approval, from_json, to_json
from core.gated import Gated, from_plain, to_plain
from plumbing.records import Records
from workers.adapters.store import written

TTL = redis_keys.GATE_TTL


@dataclass(frozen=True)
class PlanRecord:
    """The plan a PR's comment showed at one SHA: what an approval there can cover."""

    gates: dict[str, dict[str, Gated]]  # project identity → key → gated change; every planned project
    failed: list[str]  # project identities whose plan failed: nothing there can be approved
    published_at: str | None = None  # GitHub's time the plan comment showed this plan (approvals come after)
    digest: str = ""  # core.gated.published_digest: what the approval and the "Approve" button name
    runs: dict[str, str] = field(default_factory=dict)  # identity → its run (core.runs): the page a re-judge updates


def _key(kind: str, repo_id: int, number: int, sha: str) -> str:
    return (
        redis_keys.approvals(repo_id, number, sha) if kind == "approvals" else redis_keys.destroys(repo_id, number, sha)
    )


def save_plan(records: Records, repo_id: int, number: int, sha: str, record: PlanRecord) -> None:
    payload = {
        "gates": {identity: to_plain(gates) for identity, gates in record.gates.items()},
        "failed": record.failed,
        "published_at": record.published_at,
        "digest": record.digest,
        "runs": record.runs,
    }
    records.set(_key("destroys", repo_id, number, sha), json.dumps(payload), ex=TTL)


def load_plan(records: Records, repo_id: int, number: int, sha: str) -> PlanRecord | None:
    """The record, or None when it is missing or of another shape (nothing can be approved then)."""
    data = records.get_json(_key("destroys", repo_id, number, sha))
    if not isinstance(data, dict) or not isinstance(data.get("gates"), dict):
        return None
    try:
        gates = {identity: from_plain(plain) for identity, plain in data["gates"].items()}
    except ValueError:
        return None
    found = data.get("runs")
    runs = (
        {i: r for i, r in found.items() if isinstance(i, str) and isinstance(r, str)} if isinstance(found, dict) else {}
    )
    failed, digest = list(data.get("failed") or []), str(data.get("digest") or "")
    return PlanRecord(gates, failed, data.get("published_at"), digest, runs)


def start_sha(records: Records, repo_id: int, number: int, sha: str) -> None:
    """A SHA seen for the first time has no approvals: say so, sparing a comment listing later."""
    records.set(_key("approvals", repo_id, number, sha), "[]", nx=True, ex=TTL)


def had_approvals(records: Records, repo_id: int, number: int, sha: str) -> bool:
    """Were approvals recorded at `sha` (for the audit log when a push voids them)?"""
    text = records.get(_key("approvals", repo_id, number, sha))
    try:
        return bool(text is not None and from_json(text))
    except ValueError:
        return False


def add_approval(records: Records, repo_id: int, number: int, sha: str, known: list[Approval], new: Approval) -> None:
    records.set(_key("approvals", repo_id, number, sha), to_json([*known, new]), ex=TTL)


async def load_approvals(
    records: Records, gh: GitHubAPI, *, repo: str, repo_id: int, number: int, sha: str, bot_login: str
) -> list[Approval]:
    """From Redis when the record's seal verifies, else rebuilt from the sealed markers in the bot's own
    reply comments on `number` that nobody else changed."""
    key = _key("approvals", repo_id, number, sha)
    text = records.get(key)
    if text is not None:
        try:
            return from_json(text)
        except ValueError:
            pass
    comments = [c async for c in gh.getiter(f"/repos/{repo}/issues/{number}/comments?per_page=100")]
    comments = sorted([*comments, *await _thread_replies(gh, repo, number)], key=_written_at)
    altered = written.altered(records, repo_id, comments)
    rebuilt = approvals_from_comments(
        comments, bot_login=bot_login, key=records.marker_key, repo_id=repo_id, number=number, sha=sha, altered=altered
    )
    if not altered:  # a changed comment is put back soon: its marker may count then, so nothing is cached now
        records.set(key, to_json(rebuilt), ex=TTL)
    return rebuilt


def set_approvals(records: Records, repo_id: int, number: int, sha: str, approvals: list[Approval]) -> None:
    """What counts at `sha` from now on (a dismissed review's approval taken out)."""
    records.set(_key("approvals", repo_id, number, sha), to_json(approvals), ex=TTL)


async def _thread_replies(gh: GitHubAPI, repo: str, number: int) -> list[dict[str, Any]]:
    """The PR's review comments, where plangate answers commands written in a review thread; none on
    an issue."""
    try:
        return [c async for c in gh.getiter(f"/repos/{repo}/pulls/{number}/comments?per_page=100")]
    except BadRequest as exc:
        if exc.status_code == HTTPStatus.NOT_FOUND:
            return []
        raise


def _written_at(comment: dict[str, Any]) -> tuple[str, int]:
    """The order comments were written in (GitHub's clock, then its ids, which only grow)."""
    return str(comment.get("created_at") or ""), int(comment.get("id") or 0)


def gate_at_commit(records: Records, repo_id: int, sha: str, number: int, *, passed: bool) -> list[int]:
    """Record whether PR `number`'s gate at `sha` passes; the other PRs at that commit whose gate does
    not. Check runs and statuses belong to a commit, not to a PR: a second PR with the same head (and
    another base, so nothing to destroy) must not turn the first one's required check green."""
    key = redis_keys.sha_gates(repo_id, sha)
    records.hset(key, str(number), "passed" if passed else "open")
    records.conn.expire(key, TTL)
    return sorted(int(n) for n, state in records.hgetall(key).items() if state != "passed" and n != str(number))
