"""GitHub output for jobs (Atlantis's "VCS output"): statuses, the plan comment, changed files.

As few API calls as the work needs: the bot's login and each PR's plan-comment ids are cached
in Redis (sealed: the login decides whose approval markers count, the ids which comments the bot
edits), so a re-plan edits its comment in place without listing the PR's comments first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core import redis_keys
from core.render.marker import parse_marker
from plumbing.records import Records
from workers.adapters.github.auth import app_client
from workers.adapters.github.checks import CheckRuns
from workers.adapters.github.comments import set_comment_body
from workers.adapters.store import written

MAX_PR_FILES = 3000  # GitHub's pulls/{n}/files stops here
_POSTING = 0  # a part whose POST may have landed, its id not yet recorded (GitHub's ids start at 1)


_BOT_LOGIN = redis_keys.BOT_LOGIN


async def bot_login(records: Records, app_id: int, private_key: str, api_url: str) -> str:
    """`<slug>[bot]`, from GET /app (needs the App JWT); cached, the slug never changes."""
    cached = records.get(_BOT_LOGIN)
    if cached is not None:
        return cached
    async with app_client(app_id, private_key, api_url) as (gh, jwt):
        app = await gh.getitem("/app", jwt=jwt)
    login = f"{app['slug']}[bot]"
    records.set(_BOT_LOGIN, login)
    return login


async def set_status(
    gh: GitHubAPI,
    repo: str,
    sha: str,
    context: str,
    state: str,
    description: str,
    target_url: str | None = None,
    *,
    summary: str | None = None,
    approve: str | None = None,
) -> None:
    """Report one context on one commit: a check run where the client reports with checks (with the
    Markdown `summary`, and `approve`: the "Approve destroys" button for the plan of that digest), else
    a commit status."""
    checks = getattr(gh, "checks", None)
    if isinstance(checks, CheckRuns) and await checks.report(
        gh, repo, sha, context, state, description, target_url, summary=summary, approve=approve
    ):
        return
    body: dict[str, Any] = {"state": state, "context": context, "description": description[:140]}
    if target_url:
        body["target_url"] = target_url
    await gh.post(f"/repos/{repo}/statuses/{sha}", data=body)


async def report_state(gh: GitHubAPI, repo: str, sha: str, context: str) -> str | None:
    """What `context` on `sha` shows now, as a status state (a check run in progress is pending); None
    when plangate never reported it there."""
    checks = getattr(gh, "checks", None)
    if isinstance(checks, CheckRuns) and checks.mode == "checks":
        found = await gh.getitem(f"/repos/{repo}/commits/{sha}/check-runs?check_name={quote(context)}&filter=latest")
        runs = [r for r in found.get("check_runs", []) if (r.get("app") or {}).get("slug")]
        if runs:
            return "pending" if runs[0].get("status") != "completed" else str(runs[0].get("conclusion"))
    combined = await gh.getitem(f"/repos/{repo}/commits/{sha}/status")
    states = [s.get("state") for s in combined.get("statuses", []) if s.get("context") == context]
    return str(states[0]) if states else None


async def changed_files(gh: GitHubAPI, repo: str, pr: int) -> list[str] | None:
    """Files the PR changes (renames count both names); None when GitHub's 3,000-file cap is hit."""
    files: list[str] = []
    async for item in gh.getiter(f"/repos/{repo}/pulls/{pr}/files?per_page=100"):
        files.append(item["filename"])
        if item.get("previous_filename"):
            files.append(item["previous_filename"])
    if len({f for f in files}) >= MAX_PR_FILES:
        return None
    return files


def _comments_key(repo_id: int, number: int, kind: str) -> str:
    return redis_keys.comments(repo_id, number, kind)


def known_comment(records: Records, repo_id: int, number: int, kind: str) -> int | None:
    """The id of part 1 of the bot's `kind` comment on `number`, when this Redis knows it."""
    cached = records.get_json(_comments_key(repo_id, number, kind))
    part1 = cached.get("1") if isinstance(cached, dict) else None
    return int(part1) if part1 else None  # absent, or _POSTING (0): not known


def known_comments(records: Records, repo_id: int, number: int, kind: str) -> list[int]:
    """The ids of every part of the bot's `kind` comment on `number` this Redis knows, part 1 first."""
    cached = records.get_json(_comments_key(repo_id, number, kind))
    if not isinstance(cached, dict):
        return []
    return [int(v) for _, v in sorted((int(k), v) for k, v in cached.items()) if v]


def moved_comment(records: Records, repo_id: int, number: int, old: int, new: int) -> None:
    """A plan comment part posted again under a new id (someone deleted it): edit that one from now on."""
    key = _comments_key(repo_id, number, "plan")
    cached = records.get_json(key)
    if isinstance(cached, dict) and old in {int(v) for v in cached.values()}:
        moved = {k: (new if int(v) == old else int(v)) for k, v in cached.items()}
        records.set(key, json.dumps(moved), ex=redis_keys.GATE_TTL)
        records.conn.delete(redis_keys.comment_url(repo_id, number, "plan"))


def known_url(records: Records, repo_id: int, number: int, kind: str) -> str | None:
    """The URL of part 1 of the bot's `kind` comment on `number`, as its last edit answered."""
    return records.get(redis_keys.comment_url(repo_id, number, kind))


async def learn_comments(
    gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, number: int, login: str, kind: str
) -> None:
    """Find the bot's `kind` comments on GitHub unless this Redis knows them, so that publishing need
    not (a PR's dispatch does this while git fetches). Written only where nothing is recorded yet: a
    publish that recorded its comment meanwhile is never overwritten."""
    key = _comments_key(repo_id, number, kind)
    if records.get_json(key) is None:
        found = await _find_own(gh, records, repo, repo_id, number, login, kind)
        records.set(key, json.dumps(found), ex=redis_keys.GATE_TTL, nx=True)


async def _find_own(
    gh: GitHubAPI, records: Records, repo: str, repo_id: int, number: int, login: str, kind: str
) -> dict[int, int]:
    """part → comment id of the bot's own `kind` comments; markers by anyone else, or in a bot comment
    someone else changed (workers.adapters.store.written), never count."""
    found: dict[int, int] = {}
    comments = [c async for c in gh.getiter(f"/repos/{repo}/issues/{number}/comments?per_page=100")]
    altered = written.altered(records, repo_id, comments)
    for comment in comments:
        if comment["user"]["login"] != login or comment["id"] in altered:
            continue
        parsed = parse_marker(comment.get("body") or "")
        if parsed and parsed[0] == kind:
            found.setdefault(int(parsed[1].get("part", 1)), int(comment["id"]))
    return found


@dataclass(frozen=True)
class Published:
    """Where a comment now says what it says, and since when (GitHub's clock, to the second)."""

    url: str | None
    at: str | None  # the latest `updated_at` among the parts written


async def upsert_comments(
    gh: GitHubAPI,
    records: Records,
    *,
    repo: str,
    repo_id: int,
    number: int,
    login: str,
    kind: str,
    bodies: list[str],
) -> Published:
    """Edit the bot's `kind` comments in place (posting parts that do not exist yet): part 1's URL and
    when the text went out, which approvals are measured against.

    Parts left over from a longer earlier version are edited to say they are no longer used.
    """
    key = _comments_key(repo_id, number, kind)
    cached = records.get_json(key)
    known = {int(k): int(v) for k, v in cached.items()} if isinstance(cached, dict) else None
    if known is None or _POSTING in known.values():  # unknown, or a post that may have landed: look
        known = await _find_own(gh, records, repo, repo_id, number, login, kind)
    first_url: str | None = None
    stamps: list[str] = []
    for part, body in enumerate(bodies, start=1):
        comment = None
        if part in known:
            written.intend(records, repo_id, known[part], number, body)
            try:
                comment = await gh.patch(f"/repos/{repo}/issues/comments/{known[part]}", data={"body": body})
            except BadRequest as exc:
                if exc.status_code.value != 404:
                    raise
        if comment is None:
            # from here until its id is recorded, a crash makes the next try look on GitHub first
            records.set(key, json.dumps({**known, part: _POSTING}), ex=redis_keys.GATE_TTL)
            comment = await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})
        known[part] = int(comment["id"])
        written.remember(records, repo_id, comment, number)
        stamps.append(str(comment.get("updated_at") or comment.get("created_at") or ""))
        if part == 1:
            first_url = comment.get("html_url")
    for part in sorted(p for p in known if p > len(bodies)):
        unused = f"<!-- plangate:{kind}-unused -->\n_(This continuation is no longer needed.)_"
        written.intend(records, repo_id, known[part], number, unused)
        answer = await gh.patch(f"/repos/{repo}/issues/comments/{known[part]}", data={"body": unused})
        written.remember(records, repo_id, answer, number)
        del known[part]
    records.set(key, json.dumps(known), ex=redis_keys.GATE_TTL)
    if first_url:
        records.set(redis_keys.comment_url(repo_id, number, kind), first_url, ex=redis_keys.GATE_TTL)
    return Published(first_url, max(stamps) if all(stamps) and stamps else None)


async def post_comment(
    gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, number: int, body: str
) -> dict[str, Any]:
    """A new comment by the App, recorded as written (someone else's later change is put back)."""
    comment: dict[str, Any] = await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})
    written.remember(records, repo_id, comment, number)
    return comment


async def edit_comment(
    gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, number: int, comment_id: int, body: str
) -> dict[str, Any] | None:
    """Edit one of the App's comments, recorded as written; None when someone deleted it."""
    written.intend(records, repo_id, comment_id, number, body)
    comment = await set_comment_body(gh, repo, comment_id, body)
    if comment is not None:
        written.remember(records, repo_id, comment, number)
    return comment


async def reply_in_thread(gh: GitHubAPI, *, repo: str, number: int, thread: int, body: str) -> dict[str, Any]:
    """The App's answer in a review thread (`thread`: its first comment; GitHub takes replies there)."""
    reply: dict[str, Any] = await gh.post(
        f"/repos/{repo}/pulls/{number}/comments/{thread}/replies", data={"body": body}
    )
    return reply


async def open_issue(
    gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, title: str, body: str, labels: list[str] | None = None
) -> dict[str, Any]:
    """An issue opened by the App, its body recorded as written."""
    data: dict[str, Any] = {"title": title, "body": body, **({"labels": labels} if labels else {})}
    issue: dict[str, Any] = await gh.post(f"/repos/{repo}/issues", data=data)
    written.remember(records, repo_id, issue, int(issue["number"]), issue=True)
    return issue


async def edit_issue(
    gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, number: int, data: dict[str, Any]
) -> dict[str, Any]:
    """Edit an issue the App opened (its body, state…); a new body is recorded as written."""
    issue: dict[str, Any] = await gh.patch(f"/repos/{repo}/issues/{number}", data=data)
    if "body" in data:
        written.remember(records, repo_id, issue, number, issue=True)
    return issue


async def at_once(*calls: Awaitable[Any]) -> list[Any]:
    """The answers of `calls`, made at once; once all have ended, the first failure (in order) is raised,
    so none is still running when the caller's client closes."""
    done = await asyncio.gather(*calls, return_exceptions=True)
    for answer in done:
        if isinstance(answer, BaseException):
            raise answer
    return done
