"""A slash command as a job receives it, and what handling it decided."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from workers.adapters.store.applies import BlockedApply


@dataclass(frozen=True)
class CommandRequest:
    installation_id: int
    repo_id: int
    repo: str
    clone_url: str
    default_branch: str
    number: int
    is_pr: bool
    comment_id: int
    commenter: str
    commenter_type: str
    command: str | None
    projects: list[str]
    near_miss: list[str] | None
    issue_author: str = ""
    sha: str | None = None  # `/approve-destroy SHA`
    created_at: str | None = None  # when the comment was written (GitHub's clock): what its author could see
    via: str = "comment"  # "comment", or "check_run": a button on a check run (no comment to react to)
    event_id: str = ""  # the delivery of a button press: each press is its own command


@dataclass(frozen=True)
class Outcome:
    """What the command did: the reply body, the closing reaction, and a /plan to enqueue if any."""

    reply: str
    reaction: str
    replan: dict[str, Any] | None = None
    reapply: list[BlockedApply] = field(default_factory=list)  # held applies to plan, check and apply again
    redrift: dict[str, Any] | None = None  # a drift target (one project) to check again
