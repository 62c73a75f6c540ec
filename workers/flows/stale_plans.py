"""When the apply branch moves, the open PRs planned against its old code go stale.

Each published PR plan is indexed by the project identities it covers. A push to the apply branch
that changes one of them marks those PRs' plan comments stale ("main moved at SHA; this plan may
differ from what merging applies") and re-plans them on GitHub's test merge (`merge_commit_sha`),
so reviewers approve what merging will really do. At most one re-plan per PR is pending at a time:
pushes in a burst coalesce into the next one, which plans the newest merge. `.plangate.yml` on the
default branch can turn it off (`replan_on_base_change: false`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import redis
from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core import redis_keys
from workers.adapters.github import vcs
from workers.adapters.store import written
from workers.adapters.store.records import Records

TTL = redis_keys.PR_PLANS_TTL
PENDING_TTL = redis_keys.REPLAN_PENDING_TTL
STALE_MARKER = "<!-- plangate:stale -->"
MAX_BODY = 65_536


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


def forget(conn: redis.Redis, repo_id: int, number: int) -> None:
    """A closed PR is not re-planned (the web process calls this; no seal is needed to delete)."""
    conn.hdel(_index(repo_id), str(number))


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


def stale_note(pushed: str, branch: str) -> str:
    return (
        f"{STALE_MARKER}\n> [!WARNING]\n> `{branch}` moved at {pushed[:7]}: this plan may differ from what merging "
        "applies. plangate re-plans it on the merge with the new code.\n\n"
    )


async def mark_stale(
    gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, number: int, comment_id: int, note: str
) -> None:
    """Prepend the note to the plan comment (once: a later push replaces an earlier note), to the text
    plangate wrote there: what someone else may have written in it meanwhile is not kept."""
    was = written.lookup(records, repo_id, comment_id)
    if was is not None:
        body = was.body
    else:
        try:
            comment = await gh.getitem(f"/repos/{repo}/issues/comments/{comment_id}")
        except BadRequest as exc:
            if exc.status_code.value == 404:
                return
            raise
        body = str(comment.get("body") or "")
    head, _, rest = body.partition("\n")
    if STALE_MARKER in rest:
        rest = rest[rest.index("\n\n", rest.index(STALE_MARKER)) + 2 :]
    marked = f"{head}\n{note}{rest}"
    if len(marked) <= MAX_BODY:  # a comment already at GitHub's limit stays as it is; the re-plan replaces it
        try:
            await vcs.edit_comment(
                gh, records, repo=repo, repo_id=repo_id, number=number, comment_id=comment_id, body=marked
            )
        except BadRequest as exc:
            if exc.status_code.value != 404:
                raise
