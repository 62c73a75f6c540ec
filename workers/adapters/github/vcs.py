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

from gidgethub import BadRequest
from gidgethub.abc import GitHubAPI

from core import keys
from core.render.marker import parse_marker
from workers.adapters.github.auth import app_client
from workers.adapters.github.checks import CheckRuns
from workers.adapters.store.records import Records

MAX_PR_FILES = 3000  # GitHub's pulls/{n}/files stops here
_POSTING = 0  # a part whose POST may have landed, its id not yet recorded (GitHub's ids start at 1)


_BOT_LOGIN = keys.BOT_LOGIN


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
    approve: bool = False,
) -> None:
    """Report one context on one commit: a check run where the client reports with checks (with the
    Markdown `summary`, and `approve`: the "Approve destroys" button), else a commit status."""
    checks = getattr(gh, "checks", None)
    if isinstance(checks, CheckRuns) and await checks.report(
        gh, repo, sha, context, state, description, target_url, summary=summary, approve=approve
    ):
        return
    body: dict[str, Any] = {"state": state, "context": context, "description": description[:140]}
    if target_url:
        body["target_url"] = target_url
    await gh.post(f"/repos/{repo}/statuses/{sha}", data=body)


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
    return keys.comments(repo_id, number, kind)


def known_comment(records: Records, repo_id: int, number: int, kind: str) -> int | None:
    """The id of part 1 of the bot's `kind` comment on `number`, when this Redis knows it."""
    cached = records.get_json(_comments_key(repo_id, number, kind))
    part1 = cached.get("1") if isinstance(cached, dict) else None
    return int(part1) if part1 else None  # absent, or _POSTING (0): not known


def known_url(records: Records, repo_id: int, number: int, kind: str) -> str | None:
    """The URL of part 1 of the bot's `kind` comment on `number`, as its last edit answered."""
    return records.get(keys.comment_url(repo_id, number, kind))


async def learn_comments(
    gh: GitHubAPI, records: Records, *, repo: str, repo_id: int, number: int, login: str, kind: str
) -> None:
    """Find the bot's `kind` comments on GitHub unless this Redis knows them, so that publishing need
    not (a PR's dispatch does this while git fetches). Written only where nothing is recorded yet: a
    publish that recorded its comment meanwhile is never overwritten."""
    key = _comments_key(repo_id, number, kind)
    if records.get_json(key) is None:
        found = await _find_own(gh, repo, number, login, kind)
        records.set(key, json.dumps(found), ex=keys.GATE_TTL, nx=True)


async def _find_own(gh: GitHubAPI, repo: str, number: int, login: str, kind: str) -> dict[int, int]:
    """part → comment id of the bot's own `kind` comments; markers by anyone else never count."""
    found: dict[int, int] = {}
    async for comment in gh.getiter(f"/repos/{repo}/issues/{number}/comments?per_page=100"):
        if comment["user"]["login"] != login:
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
        known = await _find_own(gh, repo, number, login, kind)
    first_url: str | None = None
    stamps: list[str] = []
    for part, body in enumerate(bodies, start=1):
        comment = None
        if part in known:
            try:
                comment = await gh.patch(f"/repos/{repo}/issues/comments/{known[part]}", data={"body": body})
            except BadRequest as exc:
                if exc.status_code.value != 404:
                    raise
        if comment is None:
            # from here until its id is recorded, a crash makes the next try look on GitHub first
            records.set(key, json.dumps({**known, part: _POSTING}), ex=keys.GATE_TTL)
            comment = await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})
        known[part] = int(comment["id"])
        stamps.append(str(comment.get("updated_at") or comment.get("created_at") or ""))
        if part == 1:
            first_url = comment.get("html_url")
    for part in sorted(p for p in known if p > len(bodies)):
        await gh.patch(
            f"/repos/{repo}/issues/comments/{known[part]}",
            data={"body": f"<!-- plangate:{kind}-unused -->\n_(This continuation is no longer needed.)_"},
        )
        del known[part]
    records.set(key, json.dumps(known), ex=keys.GATE_TTL)
    if first_url:
        records.set(keys.comment_url(repo_id, number, kind), first_url, ex=keys.GATE_TTL)
    return Published(first_url, max(stamps) if all(stamps) and stamps else None)


async def post_comment(gh: GitHubAPI, repo: str, number: int, body: str) -> dict[str, Any]:
    comment: dict[str, Any] = await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})
    return comment


async def at_once(*calls: Awaitable[Any]) -> list[Any]:
    """The answers of `calls`, made at once; once all have ended, the first failure (in order) is raised,
    so none is still running when the caller's client closes."""
    done = await asyncio.gather(*calls, return_exceptions=True)
    for answer in done:
        if isinstance(answer, BaseException):
            raise answer
    return done
