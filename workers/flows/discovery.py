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
from dataclasses import dataclass
from pathlib import Path

from core.config import ConfigError, RepoConfig, parse_config
from core.projects import (
    Project,
    ProjectSelection,
    all_projects,
    deleted_projects,
    find_projects,
    may_delete_projects,
)
from workers.adapters.checkout import checkout, job_workdir
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
    """The checkout's projects and those `changed` affects (`only`: these names, changed or not).
    ConfigError for an invalid or symlinked `.plangate.yml`, or a project dir that leaves the checkout."""
    snapshot = scan(work)
    config = parse_config(snapshot.config_text, refused=snapshot.config_refused)
    every = all_projects(config, snapshot.all_files, snapshot.module_sources)
    check_dirs(work, every)
    selection = find_projects(config, changed, snapshot.all_files, snapshot.module_sources)
    if only:
        selection = ProjectSelection(tuple(p for p in every if p.name in only))
    return Discovered(snapshot, config, every, selection)


async def deleted(
    root: Path,
    *,
    repo_id: int,
    scope: str,
    base_sha: str,
    clone_url: str,
    token: str | None,
    head: Discovered,
    changed: list[str] | None,
) -> tuple[Project, ...]:
    """The base's projects the change deleted; the base is checked out only when that is possible."""
    if not base_sha or not may_delete_projects(changed, head.snapshot.all_files):
        return ()
    with job_workdir(root, repo_id, scope, base_sha, "_base") as work:
        await asyncio.to_thread(checkout, clone_url, base_sha, work, token, timeout=CHECKOUT_TIMEOUT)
        try:
            base = discover(work, None)
        except ConfigError as exc:
            log.warning(json.dumps({"base": base_sha, "deleted_projects": "base config invalid", "error": str(exc)}))
            return ()
    return deleted_projects(base.every, head.snapshot.all_files, changed, base_sha)


def with_deleted(selected: tuple[Project, ...], gone: tuple[Project, ...]) -> list[Project]:
    """What to plan: the selected projects, except those deleted (planned as destroys instead)."""
    dropped = {p.identity for p in gone}
    return [p for p in selected if p.identity not in dropped] + list(gone)
