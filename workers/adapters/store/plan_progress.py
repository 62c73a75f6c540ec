"""What a multi-project PR plan's progress needs in Redis (workers.flows.plan_progress): the projects a
dispatch plans (sealed: their labels are written into the bot's comment), the job planning each, the
plans ended, one PR-wide turn between edits, the lock on the PR's plan comment, and the sealed flag
"the plan of this SHA is being published".

None of it moves the gate: a forged entry at worst makes a progress comment count wrong or stay quiet.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

from core import redis_keys
from plumbing.records import Records

_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"
_WAIT_STEP = 0.05  # seconds between two tries at a held lock


@dataclass(frozen=True)
class Progress:
    """A dispatch's projects (identity → label, in planning order), the job planning each, those ended."""

    projects: dict[str, str]
    jobs: dict[str, str]
    done: frozenset[str]


def start(records: Records, repo_id: int, pr: int, sha: str, projects: Mapping[str, str]) -> None:
    """The dispatch at `sha` plans `projects`: progress is counted for them from now on."""
    ttl = redis_keys.PROGRESS_TTL
    records.set(redis_keys.progress(repo_id, pr, sha), json.dumps(dict(projects)), ex=ttl)


def planned_by(records: Records, repo_id: int, pr: int, sha: str, jobs: Mapping[str, str]) -> None:
    """Which job plans each project (identity → job id); a later call (a project handed on) wins."""
    key = redis_keys.progress_jobs(repo_id, pr, sha)
    for identity, job in jobs.items():
        records.hset(key, identity, job)
    records.conn.expire(key, redis_keys.PROGRESS_TTL)


def ended(records: Records, repo_id: int, pr: int, sha: str, identity: str, job: str) -> None:
    """Job `job` ended its plan of `identity` (planned or failed). Kept by job, so that a plan of an
    earlier dispatch of the same SHA never counts for this one."""
    key = redis_keys.progress_done(repo_id, pr, sha)
    with records.conn.pipeline(transaction=False) as pipe:
        pipe.sadd(key, json.dumps([identity, job]))
        pipe.expire(key, redis_keys.PROGRESS_TTL)
        pipe.execute()


def load(records: Records, repo_id: int, pr: int, sha: str) -> Progress | None:
    """The progress at `sha`; None when no dispatch counts it (one project, a merge group, expired)."""
    projects = records.get_json(redis_keys.progress(repo_id, pr, sha))
    if not isinstance(projects, dict):
        return None
    jobs = records.hgetall(redis_keys.progress_jobs(repo_id, pr, sha))
    done = set()
    for raw in records.conn.smembers(redis_keys.progress_done(repo_id, pr, sha)):
        try:
            identity, job = json.loads(raw)
        except (ValueError, TypeError):
            continue
        if jobs.get(identity) == job:
            done.add(identity)
    return Progress({str(k): str(v) for k, v in projects.items()}, jobs, frozenset(done))


def counted(records: Records, repo_id: int, pr: int, sha: str) -> bool:
    """Does a dispatch count the progress at `sha`? One key's existence: `load` reads and checks it all."""
    return bool(records.conn.exists(redis_keys.progress(repo_id, pr, sha)))


def take_turn(records: Records, repo_id: int, pr: int, *, first: bool = False) -> bool:
    """May a progress edit of the PR's comment go now? At most one per PROGRESS_EVERY seconds across
    all workers; the `first` (a dispatch's "0 of N") always may, and starts the wait."""
    key = redis_keys.progress_turn(repo_id, pr)
    return bool(records.conn.set(key, "1", ex=redis_keys.PROGRESS_EVERY, nx=not first))


def mark_published(records: Records, repo_id: int, pr: int, sha: str) -> None:
    """The publish of `sha` begins: no progress of `sha` may edit the comment any more."""
    records.set(redis_keys.plan_published(repo_id, pr, sha), "1", ex=redis_keys.PUBLISHED_TTL)


def published(records: Records, repo_id: int, pr: int, sha: str) -> bool:
    return records.get(redis_keys.plan_published(repo_id, pr, sha)) == "1"


@asynccontextmanager
async def comment_lock(records: Records, repo_id: int, pr: int, *, wait: float) -> AsyncIterator[bool]:
    """Hold the lock on the PR's plan comment, waiting up to `wait` seconds for it; yields whether it
    is held. It expires after COMMENT_LOCK_TTL seconds (a holder that died), and is released only by
    its holder."""
    key, token = redis_keys.comment_lock(repo_id, pr), uuid.uuid4().hex
    deadline = time.monotonic() + wait
    held = bool(records.conn.set(key, token, nx=True, ex=redis_keys.COMMENT_LOCK_TTL))
    while not held and time.monotonic() < deadline:
        await asyncio.sleep(_WAIT_STEP)
        held = bool(records.conn.set(key, token, nx=True, ex=redis_keys.COMMENT_LOCK_TTL))
    try:
        yield held
    finally:
        if held:
            records.conn.eval(_RELEASE, 1, key, token)
