"""plangate's own comments, as plangate wrote them: put back when someone else changes or deletes one,
and checked before a gate decision rests on what one showed.

Anyone with write access can edit or delete any comment in a repository, the App's included. A
changed plan comment could tell a reviewer "0 to destroy"; a changed reply could carry a marker. So:
an `issue_comment` edited/deleted by anyone but the App puts plangate's text back (a deleted one is
posted again) with one line saying who changed it; an approval first checks that the comments it
rests on are intact (one that is not is put back, and the approval refused: its author may have read
the changed text); and approvals count only when written after plangate last put a comment back.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from core.contract import CommentChange
from core.render.text import one_line
from workers.adapters.github import GitHub, comments, issues, vcs
from workers.adapters.github.auth import installation_client
from workers.adapters.store import audit, written
from workers.adapters.store.plan_progress import comment_lock
from workers.adapters.store.written import Written
from workers.context import WorkerContext

log = logging.getLogger("plangate.restore")
MAX_BODY = 65_536
LOCK_WAIT = 60.0  # seconds: a publish holds the plan comment's lock for one edit at most


_NOTE = re.compile(r"> \[!NOTE\]\n> [^\n]*; plangate (?:put its own text back|posted it again)\.\n\n")


def with_note(body: str, by: str | None, at: str | None, *, deleted: bool, thing: str = "comment") -> str:
    """plangate's text with one line, after its marker, saying who changed it last (when it fits GitHub's
    limit): a note from an earlier time is replaced, not stacked."""
    who = f"@{one_line(by, 100)}" if by else "someone else"
    when = f" at {one_line(at, 40)}" if at else ""
    did = f"deleted this {thing}" if deleted else f"edited this {thing}"
    again = "posted it again" if deleted else "put its own text back"
    note = f"> [!NOTE]\n> {who} {did}{when}; plangate {again}.\n\n"
    marker, sep, rest = body.partition("\n")
    if not (sep and marker.startswith("<!--")):
        marker, rest = "", body
    rest = _NOTE.sub("", rest, count=1) if rest.startswith("> [!NOTE]") else rest
    noted = f"{marker}\n{note}{rest}" if marker else f"{note}{rest}"
    return noted if len(noted) <= MAX_BODY else body


async def put_back(
    ctx: WorkerContext,
    gh: GitHub,
    *,
    repo: str,
    repo_id: int,
    comment_id: int,
    was: Written,
    by: str | None,
    at: str | None,
    deleted: bool,
) -> int:
    """Write plangate's text again (a deleted comment anew); the comment's id now."""
    body = with_note(was.body, by, at, deleted=deleted)
    answer = None
    if not deleted:
        written.intend(ctx.records, repo_id, comment_id, was.number, body)
        answer = await comments.set_comment_body(gh, repo, comment_id, body)
        if answer is None:  # deleted meanwhile
            deleted = True
            body = with_note(was.body, by, at, deleted=True)
    if answer is None:
        answer = await comments.create_comment(gh, repo, was.number, body)
        written.forget(ctx.records, repo_id, comment_id)
        vcs.moved_comment(ctx.records, repo_id, was.number, comment_id, int(answer["id"]))
    written.remember(ctx.records, repo_id, answer, was.number, restored_from=by, restoring=True)
    audit.record(
        ctx.redis, "comment-restored", repo=repo, number=was.number, comment=comment_id, by=by, deleted=deleted
    )
    return int(answer["id"])


async def on_change(ctx: WorkerContext, req: CommentChange) -> str:
    """An `issue_comment` edited or deleted by someone other than its author, the App: put plangate's text back."""
    was = written.lookup(ctx.records, req.repo_id, req.comment_id)
    if was is None:
        return "not plangate's, or its record is gone"
    # Under the lock a publish holds while it edits the PR's plan comment, with plangate's text read
    # again: text read before a publish must never be put back over the plan it wrote.
    async with (
        installation_client(ctx.tokens, req.installation_id, ctx.settings.api_url) as gh,
        comment_lock(ctx.records, req.repo_id, was.number, wait=LOCK_WAIT),
    ):
        was = written.lookup(ctx.records, req.repo_id, req.comment_id) or was
        shown = None if req.action == "deleted" else await comments.get_comment(gh, req.repo, req.comment_id)
        if shown is not None and written.matches(was, shown):
            return "as plangate wrote it"
        deleted = shown is None
        await put_back(
            ctx,
            gh,
            repo=req.repo,
            repo_id=req.repo_id,
            comment_id=req.comment_id,
            was=was,
            by=req.by,
            at=req.at,
            deleted=deleted,
        )
    log.info(json.dumps({"repo": req.repo, "comment": req.comment_id, "by": req.by, "outcome": "restored"}))
    return "restored"


@dataclass(frozen=True)
class Shown:
    """Whether the comments a decision rests on still show plangate's text, and since when."""

    intact: bool
    restored: str | None  # GitHub's time plangate last put one of them back: approvals must come after


async def check_shown(ctx: WorkerContext, gh: GitHub, *, repo: str, repo_id: int, comment_ids: Iterable[int]) -> Shown:
    """Read each comment plangate knows it wrote; one that someone else changed is put back now."""
    intact, latest = True, None
    for comment_id in comment_ids:
        was = written.lookup(ctx.records, repo_id, comment_id)
        if was is None:
            continue  # Redis lost what it was: the sealed records and markers decide alone
        shown = await comments.get_comment(gh, repo, comment_id)
        if shown is None or not written.matches(was, shown):
            intact = False
            new_id = await put_back(
                ctx,
                gh,
                repo=repo,
                repo_id=repo_id,
                comment_id=comment_id,
                was=was,
                by=None,
                at=None,
                deleted=shown is None,
            )
            was = written.lookup(ctx.records, repo_id, new_id) or was
        if was.restored and (latest is None or was.restored > latest):
            latest = was.restored
    return Shown(intact, latest)


async def check_issue(ctx: WorkerContext, gh: GitHub, *, repo: str, repo_id: int, number: int) -> Shown:
    """The body of an issue plangate opened (a blocked direct push), as `check_shown` does for comments."""
    was = written.lookup_issue(ctx.records, repo_id, number)
    if was is None:
        return Shown(True, None)
    shown = await issues.get_issue(gh, repo, number)
    if written.matches(was, shown, issue=True):
        return Shown(True, was.restored)
    body = with_note(was.body, None, None, deleted=False, thing="issue")
    answer = await issues.set_issue_body(gh, repo, number, body)
    again = written.remember(ctx.records, repo_id, answer, number, issue=True, restoring=True)
    audit.record(ctx.redis, "comment-restored", repo=repo, number=number, issue=True)
    return Shown(False, again.restored)
