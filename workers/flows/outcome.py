"""What handling a slash command decided: the reply, the reaction, and the work it leads to."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.contract import PlanRequest, PushRequest
from core.drift_schedule import DriftTarget
from core.projects import Project
from workers.adapters.store.applies import BlockedApply


@dataclass(frozen=True)
class Outcome:
    """What the command did: the reply body, the closing reaction, and a /plan to enqueue if any."""

    reply: str
    reaction: str
    replan: PlanRequest | None = None
    reapply: list[BlockedApply] = field(default_factory=list)  # held applies to plan, check and apply again
    redrift: DriftTarget | None = None  # a drift target (one project) to check again
    repush: PushRequest | None = None  # a merge whose apply was lost, to plan, check and apply again
    accept: tuple[DriftTarget, Project] | None = None  # `/accept-drift`: the drift issue's repository and project
