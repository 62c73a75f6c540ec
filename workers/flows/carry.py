"""Smart re-planning: a push re-plans only the projects whose inputs changed since the PR's last planned
SHA (core.inputs says what an input is); the others carry their last plan forward, destroys included,
so the gate judges the head's full destroy set and an approval of the previous SHA still counts for
nothing. `/plan`, Re-run and merge groups always plan everything."""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from core.config import DEFAULT_WHEN_MODIFIED
from core.contract import PlanRequest
from core.inputs import FileIndex, Footing, LastPlan, carried, fingerprint
from core.projects import Project
from core.results import ProjectResult
from workers.adapters.store import applies as apply_store
from workers.adapters.store import last_plans
from workers.adapters.terraform.env import ToolNotFoundError, detect_tool
from workers.context import WorkerContext
from workers.flows.discovery import Discovered


@dataclass(frozen=True)
class Carried:
    """A project whose last plan is kept: the publish job reads it from `last.job_id`."""

    project: Project
    last: LastPlan


def shown_at(result: ProjectResult, req: PlanRequest, kept: Carried) -> ProjectResult:
    """A carried plan's result as the head's: the gate sees its destroys at this SHA."""
    return replace(result, sha=req.sha, carried_from=kept.last.planned_at) if result.plan is not None else result


def may_carry(req: PlanRequest, project: Project) -> bool:
    """A PR's automatic plans carry; a command or a Re-run press asks for fresh plans: of the projects
    `/plan NAME` names (the others carry as on a push), else of all."""
    if req.is_merge_group:
        return False
    if req.only:
        return project.name not in req.only
    return not req.trigger.asked_by_a_person


def fingerprints(ctx: WorkerContext, req: PlanRequest, work: Path, found: Discovered) -> dict[str, str]:
    """identity → the fingerprint of each selected project's inputs in checkout `work` (blocking)."""
    when = {p.name: p.when_modified for p in found.config.projects or ()}
    code = f"merge:{req.code_sha}" if req.code_sha else "head"
    digests: dict[str, str] = {}
    tools: dict[str | None, str] = {}
    out: dict[str, str] = {}
    index = FileIndex(found.snapshot.all_files)
    projects = found.selection.projects
    applied = apply_store.last_applied_each(ctx.records, req.repo_id, [p.identity for p in projects])
    for project, last in zip(projects, applied, strict=True):
        paths = index.input_paths(project, found.snapshot.module_sources, when.get(project.name, DEFAULT_WHEN_MODIFIED))
        digest_all(work, paths, digests)
        if project.tool not in tools:
            tools[project.tool] = _tool_identity(project.tool)
        out[project.identity] = fingerprint(project, digests, paths, Footing(code, tools[project.tool], last or ""))
    return out


def split(
    ctx: WorkerContext, req: PlanRequest, projects: list[Project], inputs: Mapping[str, str]
) -> tuple[list[Project], list[Carried]]:
    """The projects to plan now and those carried forward from the PR's last published plans."""
    carriable = [p for p in projects if may_carry(req, p)]
    kept = carried(carriable, inputs, last_plans.load(ctx.records, req.repo_id, req.pr)) if carriable else {}
    return (
        [p for p in projects if p.identity not in kept],
        [Carried(p, kept[p.identity]) for p in projects if p.identity in kept],
    )


def remember(
    ctx: WorkerContext, req: PlanRequest, inputs: Mapping[str, str], made: Mapping[str, tuple[str, str]]
) -> None:
    """After publishing: what the next push may carry (`made`: identity → (job id, SHA planned at),
    only for plans that succeeded)."""
    plans = {
        identity: LastPlan(inputs[identity], job, at) for identity, (job, at) in made.items() if identity in inputs
    }
    last_plans.save(ctx.records, req.repo_id, req.pr, req.sha, plans)


def digest_all(work: Path, paths: Iterable[str], digests: dict[str, str]) -> None:
    """Add each path's content digest to `digests`. A symlink's is of its target's name and, when the
    target is a file inside the checkout (which terraform reads through the link), of its content;
    a target outside is never read."""
    root = work.resolve()
    for rel in paths:
        if rel in digests:
            continue
        path = work / rel
        if path.is_symlink():
            try:
                target = path.resolve()
                inside = target.is_relative_to(root) and target.is_file()
            except (OSError, RuntimeError):  # a loop of links: nothing to read through it
                inside = False
            digests[rel] = f"link:{os.readlink(path)}:{_content(target) if inside else ''}"
        elif path.is_file():
            digests[rel] = _content(path)
        else:
            digests[rel] = "missing"


def _content(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _tool_identity(preferred: str | None) -> str:
    """The tool a project runs with, and which build of it: an upgraded binary plans again."""
    path = os.environ.get("PATH", os.defpath)
    try:
        tool = detect_tool(preferred, path=path)
    except ToolNotFoundError:
        return preferred or "none"  # the plan itself reports the missing tool
    found = shutil.which(tool, path=path)
    if found is None:
        return tool
    st = Path(found).stat()
    return f"{tool}:{found}:{st.st_size}:{st.st_mtime_ns}"
