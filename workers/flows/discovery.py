"""Which projects a commit holds and a change affects: one function for PR plans, pushes and drift.

`discover` reads a checkout (files, local modules, `.plangate.yml`), refuses project dirs that leave
it, and selects the projects the changed files affect. `deleted` finds the projects a change removed
(their directory holds no Terraform file any more): they are planned as `plan -destroy` of the
base's code, so their resources go through the gate instead of being orphaned.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from core.config import ConfigError, RepoConfig, parse_config
from core.projects import (
    Project,
    ProjectSelection,
    all_projects,
    deleted_projects,
    find_projects,
    may_delete_projects,
)
from workers.adapters.checkout import checkout, job_workdir, object_cache
from workers.adapters.scan import RepoSnapshot, scan
from workers.adapters.terraform.pipeline import CHECKOUT_TIMEOUT, UnsafePathError, inside

log = logging.getLogger("plangate.discovery")


@dataclass(frozen=True)
class Discovered:
    snapshot: RepoSnapshot
    config: RepoConfig
    every: tuple[Project, ...]  # every project of the commit
    selection: ProjectSelection  # those the change affects


def check_dirs(work: Path, projects: tuple[Project, ...]) -> None:
    """Every project dir must be a real directory inside the checkout; ConfigError names the first that is not."""
    for project in projects:
        try:
            inside(work, project.dir)
        except UnsafePathError as exc:
            raise ConfigError(f"project {project.name}", f"dir {exc}") from None


def discover(work: Path, changed: list[str] | None, only: tuple[str, ...] = ()) -> Discovered:
    """The checkout's projects and those `changed` affects, plus those named in `only` (`/plan NAME`),
    changed or not: the PR's one comment and gate always cover every project it affects.
    ConfigError for an invalid or symlinked `.plangate.yml`, or a project dir that leaves the checkout."""
    snapshot = scan(work)
    config = parse_config(snapshot.config_text, refused=snapshot.config_refused)
    every = all_projects(config, snapshot.all_files, snapshot.module_sources)
    check_dirs(work, every)
    selection = find_projects(config, changed, snapshot.all_files, snapshot.module_sources)
    if only:
        affected = {p.identity for p in selection.projects}
        named = tuple(p for p in every if p.name in only and p.identity not in affected)
        selection = replace(selection, projects=selection.projects + named)
    return Discovered(snapshot, config, every, selection)


class Fetched(Protocol):
    """What a request says about where its code comes from (PlanRequest, PushRequest, GroupRequest)."""

    @property
    def repo_id(self) -> int: ...

    @property
    def clone_url(self) -> str: ...


async def discover_at(
    root: Path, req: Fetched, scope: str, sha: str, token: str | None, changed: list[str] | None
) -> Discovered:
    """Check commit `sha` out into a throwaway directory under `root` and `discover` its projects."""
    with job_workdir(root, req.repo_id, scope, sha, "_discovery") as work:
        cache = object_cache(root, req.repo_id)
        await asyncio.to_thread(checkout, req.clone_url, sha, work, token, timeout=CHECKOUT_TIMEOUT, cache=cache)
        return discover(work, changed)


async def to_plan(
    root: Path, req: Fetched, token: str | None, head: Discovered, changed: list[str] | None, *, scope: str, base: str
) -> list[Project]:
    """The projects to plan: those the change selects, and those it deleted from the `base` commit (planned
    as destroys of the base's code instead). The base is checked out only when a deletion is possible."""
    gone = await _deleted(root, req, scope, base, token, head, changed)
    dropped = {p.identity for p in gone}
    return [p for p in head.selection.projects if p.identity not in dropped] + list(gone)


async def _deleted(
    root: Path, req: Fetched, scope: str, base_sha: str, token: str | None, head: Discovered, changed: list[str] | None
) -> tuple[Project, ...]:
    if not base_sha or not may_delete_projects(changed, head.snapshot.all_files):
        return ()
    try:
        base = await discover_at(root, req, scope, base_sha, token, None)
    except ConfigError as exc:
        log.warning(json.dumps({"base": base_sha, "deleted_projects": "base config invalid", "error": str(exc)}))
        return ()
    return deleted_projects(base.every, head.snapshot.all_files, changed, base_sha)
