"""Which drift checks are due this minute, and how to spread them out (pure: data in, data out).

`plangate cron` ticks once a minute. A tick turns each repository's `.plangate.yml` (or the
server default) into `DriftTarget`s, keeps the `due` ones and enqueues each after its
`jitter_seconds`, so a large installation's checks are spread over a window instead of all
hitting GitHub (and its secondary rate limits) in the same second. The jitter is a hash of the
target, not random: a target lands at the same offset every time, so checks stay evenly spaced.

Schedules are standard five-field cron expressions (or `@hourly`-style aliases) evaluated in UTC.
Croniter also accepts a sixth (seconds) or seventh (year) field; a tick runs once a minute, so
those are refused: a seconds field other than 0 would silently never fire.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from croniter import croniter
from croniter.croniter import CroniterError

from core.config import RepoConfig
from core.cron import is_valid_schedule

SECONDS_PER_CHECK = 2  # spread window grows by this much per due check of one installation
MAX_SPREAD = 30 * 60  # never delay a check more than this


@dataclass(frozen=True)
class DriftTarget:
    """One scheduled drift check: plain values only, so it can be an RQ job argument."""

    installation_id: int
    repo_id: int
    repo: str  # "owner/name"
    clone_url: str
    default_branch: str
    project: str | None  # None: every project of the repository (configured or discovered)
    schedule: str  # cron expression, UTC

    def to_plain(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> DriftTarget:
        """The inverse of `to_plain`; a missing or mistyped field is a ValueError naming it."""
        ints = {k: data.get(k) for k in ("installation_id", "repo_id")}
        strs = {k: data.get(k) for k in ("repo", "clone_url", "default_branch", "schedule")}
        for key, value in ints.items():
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"DriftTarget.{key}: expected an integer, got {value!r}")
        for key, value in strs.items():
            if not isinstance(value, str) or not value:
                raise ValueError(f"DriftTarget.{key}: expected a non-empty string, got {value!r}")
        project = data.get("project")
        if project is not None and (not isinstance(project, str) or not project):
            raise ValueError(f"DriftTarget.project: expected a non-empty string or None, got {project!r}")
        return cls(project=project, **ints, **strs)  # type: ignore[arg-type]


def _utc_minute(minute: datetime) -> datetime:
    """The minute in UTC with seconds dropped; a naive datetime is taken to be UTC already."""
    aware = minute.replace(tzinfo=UTC) if minute.tzinfo is None else minute.astimezone(UTC)
    return aware.replace(second=0, microsecond=0)


def due(targets: Iterable[DriftTarget], minute: datetime) -> list[DriftTarget]:
    """The targets whose schedule fires at `minute` (UTC; seconds ignored), in input order.

    An invalid schedule never fires rather than stopping the whole tick; `validate_schedule`
    is where such a schedule should have been refused.
    """
    at = _utc_minute(minute)
    answers: dict[str, bool] = {}  # many targets share one expression
    out = []
    for target in targets:
        expr = target.schedule
        if expr not in answers:
            answers[expr] = _matches(expr, at)
        if answers[expr]:
            out.append(target)
    return out


def _matches(expr: str, at: datetime) -> bool:
    if not is_valid_schedule(expr):
        return False
    try:
        return bool(croniter.match(expr.strip(), at))
    except (CroniterError, ValueError):
        return False


def spread_for(n_due_in_installation: int) -> int:
    """The jitter window (seconds) for an installation with this many checks due at once."""
    return max(0, min(n_due_in_installation * SECONDS_PER_CHECK, MAX_SPREAD))


def jitter_seconds(target: DriftTarget, spread: int) -> int:
    """A stable delay in [0, spread) from a hash of installation, repository and project; 0 if spread ≤ 0."""
    if spread <= 0:
        return 0
    key = json.dumps([target.installation_id, target.repo_id, target.project]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") % spread


def delays(due_targets: Iterable[DriftTarget]) -> list[tuple[DriftTarget, int]]:
    """Each due target with its delay in seconds, the window sized per installation."""
    targets = list(due_targets)
    per_installation = Counter(t.installation_id for t in targets)
    return [(t, jitter_seconds(t, spread_for(per_installation[t.installation_id]))) for t in targets]


def targets_for(
    config: RepoConfig,
    *,
    installation_id: int,
    repo_id: int,
    repo: str,
    clone_url: str,
    default_branch: str,
    server_default: str | None,
) -> list[DriftTarget]:
    """The drift checks one repository asks for. Off unless a schedule is configured somewhere.

    - a `projects` list: one target per project with a schedule (its own `drift`, else the
      top-level one); projects with neither are not checked;
    - no `projects` list (autodiscovery) and a top-level schedule: one target for every project;
    - no schedule anywhere in the file: the server default (`PLANGATE_DRIFT_SCHEDULE`), if set,
      as one target for every project;
    - otherwise none.
    """

    def target(project: str | None, schedule: str) -> DriftTarget:
        return DriftTarget(installation_id, repo_id, repo, clone_url, default_branch, project, schedule)

    projects = config.projects or ()
    if config.drift_schedule is None and not any(p.drift_schedule for p in projects):
        return [target(None, server_default)] if server_default else []
    if config.projects is None:
        return [target(None, config.drift_schedule)] if config.drift_schedule else []
    out = []
    for p in projects:
        schedule = p.drift_schedule or config.drift_schedule
        if schedule:
            out.append(target(p.name, schedule))
    return out
