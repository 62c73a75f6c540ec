"""What a project's plan reads from the repository, and whether a push changed it (pure).

A push re-plans only the projects whose inputs changed since the PR's last planned SHA; the others
carry their plan forward ("smart replanning"). A project's inputs are every file under its dir and
under the local modules it uses (directly or through other modules), the files its `when_modified`
globs match, `.plangate.yml`, the project's own settings, and what the plan stands on besides the
code: the commit its state was last applied from and, for a plan of GitHub's test merge, that merge.
Anything else (remote state changed outside plangate, a provider's answers) is not seen here:
`/plan` re-plans everything, and the merge's apply always makes a fresh plan.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass

from core.config import DEFAULT_WHEN_MODIFIED
from core.projects import Project, matches_any, normalize_path

CONFIG_FILE = ".plangate.yml"


def module_dirs(project_dir: str, module_sources: Mapping[str, list[str]]) -> set[str]:
    """`project_dir` and every local module dir it uses, directly or through other modules."""
    seen, stack = {project_dir}, [project_dir]
    while stack:
        user = stack.pop()
        for source in module_sources.get(user, ()):
            target = normalize_path(posixpath.join(user, source))
            if target is not None and target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


class FileIndex:
    """A repository's files by every directory they lie in, built once: each of a monorepo's projects
    then looks up its own directories instead of testing every file of the repository."""

    def __init__(self, all_files: Iterable[str]) -> None:
        unique = set(all_files)
        self.files = sorted(unique)
        self.has_config = CONFIG_FILE in unique
        self._beneath: dict[str, list[str]] = {}
        for path in self.files:
            parts = path.split("/")
            for depth in range(1, len(parts) + 1):
                self._beneath.setdefault("/".join(parts[:depth]), []).append(path)

    def beneath(self, directory: str) -> list[str]:
        """The files `under` `directory` (everything is under `.`)."""
        return self.files if directory == "." else self._beneath.get(directory, [])

    def input_paths(
        self,
        project: Project,
        module_sources: Mapping[str, list[str]],
        when_modified: tuple[str, ...] = DEFAULT_WHEN_MODIFIED,
    ) -> list[str]:
        """The repository files whose change can change `project`'s plan, sorted."""
        found = {path for d in module_dirs(project.dir, module_sources) for path in self.beneath(d)}
        if self.has_config:
            found.add(CONFIG_FILE)
        climbing = [p for p in when_modified if ".." in p.split("/")]  # the others match inside the dir only
        if climbing:
            found.update(f for f in self.files if matches_any(project.dir, climbing, f))
        return sorted(found)


def input_paths(
    project: Project,
    all_files: Iterable[str],
    module_sources: Mapping[str, list[str]],
    when_modified: tuple[str, ...] = DEFAULT_WHEN_MODIFIED,
) -> list[str]:
    """The repository files whose change can change `project`'s plan, sorted."""
    return FileIndex(all_files).input_paths(project, module_sources, when_modified)


@dataclass(frozen=True)
class Footing:
    """What a plan stands on besides the files: a change to any of these re-plans the project."""

    code: str  # "head", or "merge:<sha>" for a plan of GitHub's test merge
    tool: str  # the tool the project runs with
    applied: str  # the commit the project's state was last applied from ("" if never by plangate)


def fingerprint(project: Project, digests: Mapping[str, str], paths: Iterable[str], footing: Footing) -> str:
    """One digest of everything a plan of `project` reads; equal fingerprints mean an equal plan input.
    `digests` maps each path to its content digest (a symlink's is of its target's name)."""
    h = hashlib.sha256()
    for part in (*map(str, astuple(project)), *astuple(footing)):
        h.update(part.encode() + b"\0")
    for path in paths:
        h.update(b"f\0" + path.encode() + b"\0" + digests[path].encode() + b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class LastPlan:
    """One project's plan at the PR's last planned SHA: the job that holds it and its inputs."""

    fingerprint: str
    job_id: str
    planned_at: str  # the SHA the plan was made at (earlier than the record's when it was carried)


def carried(
    projects: Iterable[Project], fingerprints: Mapping[str, str], last: Mapping[str, LastPlan]
) -> dict[str, LastPlan]:
    """identity → the last plan each project keeps: those whose inputs are unchanged. A deleted project's
    destroy plan is always made again (its input is the base, which has no fingerprint here)."""
    kept: dict[str, LastPlan] = {}
    for project in projects:
        fp = fingerprints.get(project.identity)
        before = last.get(project.identity)
        if project.destroy_from is None and fp is not None and before is not None and before.fingerprint == fp:
            kept[project.identity] = before
    return kept
