"""Changed files + `.plangate.yml` → the projects to plan (pure).

With a `projects` list, a project is affected when a changed file matches one of its
`when_modified` globs. Globs are relative to the project dir and may climb out of it with
`..` (`../modules/**` from `infra/dns` is `infra/modules/**`), never out of the repository
(such a glob matches nothing). `*` and `?` stay inside one path segment, `**` as a whole
segment spans any number of them (zero included), `[...]` is a character class.

Without a list (autodiscovery):
- every directory directly holding a `*.tf` or `*.tf.json` file is a Terraform dir;
- a Terraform dir is *module-only* when another Terraform dir uses it as a local module
  (`source = "./..."` / `"../..."`, resolved relative to the using dir); every other
  Terraform dir is a *root* and becomes a project named after its dir (the repository root
  is named `.`, so no name can collide with a real directory);
- a changed file belongs to the nearest Terraform dir holding it (its own dir or an
  ancestor), whatever its type (templates and data files change plans too);
- a changed root is planned; a changed module-only dir is not planned itself, but every
  root that uses it, directly or through other modules, is.

`changed_files=None` means the list is unknown (GitHub lists at most 3,000 files): every
project is planned and the selection says so.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from wcmatch import glob

from core.config import DEFAULT_WHEN_MODIFIED, RepoConfig

# `*`, `?` and `[...]` stay inside one segment, `**` as a whole segment spans any number of them, a
# leading dot is like any other character; no braces, negation or extglob (written literally).
_GLOB_FLAGS = glob.GLOBSTAR | glob.DOTGLOB | glob.FORCEUNIX
# A module block's opening line; its body is then scanned with brace counting.
_MODULE_START = re.compile(r'(?m)^[ \t]*module[ \t]+(?:"[^"\n]*"|[A-Za-z_][\w-]*)[ \t]*\{')
_HCL_TOKEN = re.compile(r'"(?:[^"\\\n]|\\.)*"|#[^\n]*|//[^\n]*|/\*.*?\*/|[{}]|[^"#/{}]+|/', re.S)
_SOURCE = re.compile(r'(?m)^[ \t]*source[ \t]*=[ \t]*"(\.\.?/[^"]*)"')


@dataclass(frozen=True)
class Project:
    name: str
    dir: str  # normalized, relative to the repository root; "." is the root
    workspace: str = "default"
    tool: str | None = None
    apply_on_merge: bool = True
    drift_schedule: str | None = None
    destroy_from: str | None = None  # deleted by the change: `plan -destroy` of its code at this SHA
    depends_on: tuple[str, ...] = ()  # as its commit's `.plangate.yml` said (a deleted one's only order)

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> Project:
        """A project read back from JSON (a record, a job's arguments), where tuples come back as lists."""
        return cls(**{**data, "depends_on": tuple(data.get("depends_on", ()))})

    @property
    def identity(self) -> str:
        """What approvals and gate records name: the same name on another dir or workspace is another project."""
        return project_identity(self.name, self.workspace, self.dir)


def project_identity(name: str, workspace: str, dir: str) -> str:
    """`name@workspace:dir`: names and workspaces hold no `@` or `:` (config checks), dir comes last."""
    return f"{name}@{workspace}:{dir}"


def identity_name(identity: str) -> str:
    """The project name an identity (or a bare name) carries."""
    return identity.split("@", 1)[0]


def identity_label(identity: str) -> str:
    """How people see a project: its name, and its workspace when that is not `default`."""
    name, _, rest = identity.partition("@")
    workspace = rest.partition(":")[0]
    return name if workspace in ("", "default") else f"{name} (workspace {workspace})"


@dataclass(frozen=True)
class ProjectSelection:
    projects: tuple[Project, ...]
    changes_unknown: bool = False  # True: the changed files were unknown, so every project is planned


def normalize_path(path: str) -> str | None:
    """A repo-relative path in canonical form, or None when it is not inside the repository."""
    if not path or path.startswith("/") or "\0" in path:
        return None
    norm = posixpath.normpath(path)
    if norm == ".." or norm.startswith("../"):
        return None
    return norm


@lru_cache(maxsize=4096)
def anchor_glob(project_dir: str, pattern: str) -> str | None:
    """`pattern` (relative to `project_dir`) as a repo-relative glob; None if it leaves the repo."""
    if pattern.startswith("/"):
        return None
    anchored = posixpath.normpath(f"{project_dir or '.'}/{pattern}")  # `..` takes off the segment before it
    return None if anchored in (".", "..") or anchored.startswith("../") else anchored


@lru_cache(maxsize=4096)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex: wcmatch translates it (see _GLOB_FLAGS for its dialect)."""
    (regex,), _ = glob.translate(pattern, flags=_GLOB_FLAGS)
    return re.compile(regex)


def matches_any(project_dir: str, patterns: Iterable[str], path: str) -> bool:
    """Whether repo-relative `path` matches one of `patterns` anchored at `project_dir`."""
    norm = normalize_path(path)
    if norm is None or norm == ".":
        return False
    for pattern in patterns:
        anchored = anchor_glob(project_dir, pattern)
        if anchored is not None and glob_regex(anchored).fullmatch(norm):
            return True
    return False


def local_module_sources(tf_text: str) -> list[str]:
    """The local `source` paths (`./x`, `../x`) of the `module` blocks in one .tf file."""
    sources: list[str] = []
    for start in _MODULE_START.finditer(tf_text):
        depth, top_level = 1, []
        for token in _HCL_TOKEN.finditer(tf_text, start.end()):
            text = token.group()
            if text == "{":
                depth += 1
            elif text == "}":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and not text.startswith(("#", "//", "/*")):
                top_level.append(text)
        sources.extend(_SOURCE.findall("".join(top_level)))
    return sources


def _tf_dirs(all_files: Iterable[str]) -> set[str]:
    dirs: set[str] = set()
    for path in all_files:
        norm = normalize_path(path)
        if norm is None or ".terraform" in norm.split("/")[:-1]:
            continue
        if norm.endswith((".tf", ".tf.json")):
            dirs.add(posixpath.dirname(norm) or ".")
    return dirs


def _module_users(tf_dirs: set[str], module_sources: Mapping[str, list[str]]) -> dict[str, set[str]]:
    """Terraform dir → the Terraform dirs that use it as a local module."""
    users: dict[str, set[str]] = {}
    for user_dir, sources in module_sources.items():
        user = normalize_path(user_dir)
        if user not in tf_dirs:
            continue
        for source in sources:
            target = normalize_path(posixpath.join(user, source))
            if target in tf_dirs and target != user:
                users.setdefault(target, set()).add(user)
    return users


def _owner(path: str, tf_dirs: set[str]) -> str | None:
    """The nearest Terraform dir holding `path`."""
    d = posixpath.dirname(path) or "."
    while d not in tf_dirs:
        if d == ".":
            return None
        d = posixpath.dirname(d) or "."
    return d


def _roots_using(dirs: Iterable[str], users: Mapping[str, set[str]], roots: set[str]) -> set[str]:
    seen, stack = set(dirs), list(dirs)
    while stack:
        for user in users.get(stack.pop(), ()):
            if user not in seen:
                seen.add(user)
                stack.append(user)
    return seen & roots


def all_projects(
    config: RepoConfig, all_files: list[str], module_sources: Mapping[str, list[str]]
) -> tuple[Project, ...]:
    """Every project of the repository: the configured ones, else the discovered roots by dir."""
    if config.projects is not None:
        return tuple(
            Project(
                p.name,
                p.dir,
                p.workspace,
                p.tool,
                p.apply_on_merge,
                p.drift_schedule or config.drift_schedule,
                depends_on=p.depends_on,
            )
            for p in config.projects
        )
    tf_dirs = _tf_dirs(all_files)
    roots = tf_dirs - set(_module_users(tf_dirs, module_sources))
    return tuple(Project(d, d, drift_schedule=config.drift_schedule) for d in sorted(roots))


def find_projects(
    config: RepoConfig,
    changed_files: list[str] | None,
    all_files: list[str],
    module_sources: Mapping[str, list[str]],
) -> ProjectSelection:
    """The projects a change affects (see the module docstring for the rules)."""
    projects = all_projects(config, all_files, module_sources)
    if changed_files is None:
        return ProjectSelection(projects, changes_unknown=True)
    if config.projects is not None:
        when = {p.name: p.when_modified for p in config.projects}
        return ProjectSelection(
            tuple(
                p
                for p in projects
                if any(matches_any(p.dir, when.get(p.name, DEFAULT_WHEN_MODIFIED), f) for f in changed_files)
            )
        )
    tf_dirs = _tf_dirs(all_files)
    touched = {
        owner
        for f in changed_files
        if (norm := normalize_path(f)) is not None and (owner := _owner(norm, tf_dirs)) is not None
    }
    affected = _roots_using(touched, _module_users(tf_dirs, module_sources), {p.dir for p in projects})
    return ProjectSelection(tuple(p for p in projects if p.dir in affected))


def under(path: str, directory: str) -> bool:
    """Whether repo-relative `path` is `directory` or lies inside it (everything is inside `.`)."""
    return directory == "." or path == directory or path.startswith(directory + "/")


def may_delete_projects(changed_files: list[str] | None, all_files: list[str]) -> bool:
    """Could the change have deleted a project? (A changed `*.tf` whose directory holds none any more.)
    Cheap, from the head alone: only then is the base checked out to find which."""
    if changed_files is None:
        return True
    tf_dirs = _tf_dirs(all_files)
    for path in changed_files:
        norm = normalize_path(path)
        if norm is not None and norm.endswith((".tf", ".tf.json")) and (posixpath.dirname(norm) or ".") not in tf_dirs:
            return True
    return False


def deleted_projects(
    base: tuple[Project, ...], head_files: list[str], changed_files: list[str] | None, base_sha: str
) -> tuple[Project, ...]:
    """The base's projects whose directory holds no Terraform file at the head, and that the change
    touched: their resources would be orphaned, so they are planned as `plan -destroy` of the base's
    code (`destroy_from`), gated and applied like any other destroy."""
    head_dirs = _tf_dirs(head_files)
    return tuple(
        replace(p, destroy_from=base_sha)
        for p in base
        if p.dir not in head_dirs
        and (changed_files is None or any(under(normalize_path(f) or "", p.dir) for f in changed_files))
    )
