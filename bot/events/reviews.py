"""pull_request_review and pull_request_review_comment: commands where reviewers work.

A review's body (`submitted`) and a line comment in a review thread (`created`) are read with the same
parser as a conversation comment, so quoted lines, code blocks and mid-sentence mentions are never
commands and near misses get "did you mean". An edited review or review comment is never a command
(no handler here), as for conversation comments. A dismissed review hands its approval to the job
that voids it.
"""

from __future__ import annotations

from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core.commands import Command, NearMiss, parse_command, should_consider
from core.contract import CommandRequest, Jobs, ReviewDismissal, job_id

from .context import Delivery, repo_args

router = Router()


def _request(data: dict[str, Any], written: dict[str, Any], body: str, **where: Any) -> CommandRequest | None:
    """The command in `body`, written by `written["user"]` on the PR, as a job's request; None if none."""
    parsed = parse_command(body)
    if parsed is None:
        return None
    user = written["user"]
    return CommandRequest(
        **repo_args(data),
        number=int(data["pull_request"]["number"]),
        is_pr=True,
        issue_author=str(data["pull_request"]["user"]["login"]),
        comment_id=int(written["id"]),
        commenter=str(user["login"]),
        commenter_type=str(user.get("type") or "User"),
        command=parsed.name if isinstance(parsed, Command) else None,
        projects=parsed.projects if isinstance(parsed, Command) else (),
        sha=parsed.sha if isinstance(parsed, Command) else None,
        near_miss=(parsed.written, parsed.suggestion, parsed.reason) if isinstance(parsed, NearMiss) else None,
        reviewed_sha=str(written.get("commit_id") or ""),
        **where,
    )


def _considered(data: dict[str, Any], written: dict[str, Any], delivery: Delivery) -> bool:
    if "installation" not in data:
        delivery.ignore("no installation in the payload")
        return False
    if not should_consider("created", str((written.get("user") or {}).get("type") or "")):
        delivery.ignore("written by a bot")
        return False
    return True


async def _command(data: dict[str, Any], written: dict[str, Any], delivery: Delivery, **where: Any) -> None:
    """Enqueue the command `written` (a review, or a review comment) carries, once per id."""
    if not _considered(data, written, delivery):
        return
    request = _request(data, written, str(written.get("body") or ""), **where)
    if request is None:
        delivery.ignore("no command")
        return
    kind = "review" if request.via == "review" else "review-comment"
    job = job_id("command", request.repo_id, kind, request.comment_id)
    await delivery.enqueue(delivery.commands, Jobs.HANDLE_COMMAND, job, request)


@router.register("pull_request_review", action="submitted")
async def review_command(event: Event, delivery: Delivery) -> None:
    review = event.data["review"]
    await _command(
        event.data,
        review,
        delivery,
        via="review",
        created_at=str(review.get("submitted_at") or "") or None,
        source_url=str(review.get("html_url") or ""),
    )


@router.register("pull_request_review_comment", action="created")
async def thread_command(event: Event, delivery: Delivery) -> None:
    comment = event.data["comment"]
    await _command(
        event.data,
        comment,
        delivery,
        via="review_comment",
        created_at=str(comment.get("created_at") or "") or None,
        thread=int(comment.get("in_reply_to_id") or comment["id"]),
    )


@router.register("pull_request_review", action="dismissed")
async def review_dismissed(event: Event, delivery: Delivery) -> None:
    data = event.data
    if "installation" not in data:
        delivery.ignore("no installation in the payload")
        return
    review = data["review"]
    request = ReviewDismissal(
        **repo_args(data),
        number=int(data["pull_request"]["number"]),
        review_id=int(review["id"]),
        reviewer=str((review.get("user") or {}).get("login") or ""),
        by=str((data.get("sender") or {}).get("login") or ""),
    )
    job = job_id("dismissal", request.repo_id, request.review_id)
    await delivery.enqueue(delivery.commands, Jobs.REVIEW_DISMISSED, job, request)
