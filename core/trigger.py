"""Why a PR (or a merge group's commit) is being planned: part of the plan job's id, so that each
reason gets a job of its own, and what decides whether earlier plans may be carried forward."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Why(StrEnum):
    PUSH = "push"  # a new head (opened, synchronize, reopened)
    BASE_CHANGED = "base"  # the PR was retargeted to another base branch
    BASE_MOVED = "main"  # the base branch moved under an open PR: GitHub's test merge is planned
    COMMAND = "comment"  # `/plan` in a comment
    RERUN = "rerun"  # a check run's Re-run button
    RECOVERED = "recovered"  # Redis came back empty and the PR's plan was pending
    MERGE_GROUP = "merge-group"  # a merge queue's group commit


@dataclass(frozen=True)
class Trigger:
    why: Why = Why.PUSH
    detail: str = ""  # what tells two of the same kind apart: a comment id, a base SHA, a time

    def __str__(self) -> str:
        return f"{self.why}-{self.detail}" if self.detail else str(self.why)

    @property
    def asked_by_a_person(self) -> bool:
        """`/plan` or Re-run: plan every project afresh, nothing carried."""
        return self.why in (Why.COMMAND, Why.RERUN)


PUSHED = Trigger()
