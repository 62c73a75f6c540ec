"""issue_comment: slash commands on a PR, or on an issue plangate opened; and plangate's own comments
changed by someone else.

Only `created` is a command: an edited or deleted comment is never one and gets no answer. A comment
by an App edited or deleted by anyone but that App may be one of plangate's: the job puts plangate's
text back (workers.flows.restore). Parsing is pure (core.commands); the jobs do everything that needs
GitHub.
"""

from __future__ import annotations

from gidgethub.routing import Router
from gidgethub.sansio import Event

from core.commands import Command, NearMiss, parse_command, should_consider
from core.contract import CommandRequest, CommentChange, Jobs, job_id

from .context import Delivery, repo_args

router = Router()


@router.register("issue_comment", action="created")
async def slash_command(event: Event, delivery: Delivery) -> None:
    data = event.data
    comment, issue = data["comment"], data["issue"]
    if "installation" not in data:
        delivery.ignore("no installation in the payload")
        return
    if not should_consider(data["action"], comment["user"].get("type", "")):
        delivery.ignore("comment by a bot")
        return
    is_pr = bool(issue.get("pull_request"))
    if not is_pr and issue["user"].get("type") != "Bot":
        delivery.ignore("issue not opened by an app")
        return
    parsed = parse_command(comment.get("body") or "")
    if parsed is None:
        delivery.ignore("no command")
        return
    request = CommandRequest(
        **repo_args(data),
        number=int(issue["number"]),
        is_pr=is_pr,
        issue_author=str(issue["user"]["login"]),
        comment_id=int(comment["id"]),
        commenter=str(comment["user"]["login"]),
        commenter_type=str(comment["user"].get("type") or "User"),
        command=parsed.name if isinstance(parsed, Command) else None,
        projects=parsed.projects if isinstance(parsed, Command) else (),
        sha=parsed.sha if isinstance(parsed, Command) else None,
        created_at=str(comment.get("created_at") or "") or None,
        near_miss=(parsed.written, parsed.suggestion, parsed.reason) if isinstance(parsed, NearMiss) else None,
    )
    job = job_id("command", request.repo_id, request.comment_id)
    await delivery.enqueue(delivery.commands, Jobs.HANDLE_COMMAND, job, request)


async def changed_by_another(event: Event, delivery: Delivery) -> None:
    data = event.data
    comment, sender = data["comment"], data.get("sender") or {}
    if "installation" not in data:
        delivery.ignore("no installation in the payload")
        return
    author = comment.get("user") or {}
    if author.get("type") != "Bot" or str(sender.get("login") or "") == str(author.get("login") or ""):
        delivery.ignore("not an App's comment changed by someone else")
        return
    request = CommentChange(
        **repo_args(data),
        number=int(data["issue"]["number"]),
        comment_id=int(comment["id"]),
        action=str(data["action"]),
        by=str(sender.get("login") or ""),
        at=(str(comment.get("updated_at") or "") or None) if data["action"] == "edited" else None,
    )
    job = job_id("restore", request.repo_id, request.comment_id, event.delivery_id)
    await delivery.enqueue(delivery.commands, Jobs.RESTORE_COMMENT, job, request)


for _action in ("edited", "deleted"):
    router.add(changed_by_another, "issue_comment", action=_action)
