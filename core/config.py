"""`.plangate.yml` text → RepoConfig (pure). Strict: every mistake is a ConfigError naming its key.

A typo must never be silently ignored (an unknown `destroy_approver:` key would otherwise
widen who may approve), so unknown keys, wrong types and duplicate keys are errors. A key
whose value is null (`projects:` with nothing after it) takes its default. No file, or an
empty one, is the default config: no `projects` list, so projects are autodiscovered.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from core.config_yaml import YamlError, load
from core.cron import is_valid_schedule
from core.quoted import SHOWN, describe, shown
from core.render.mask import PatternError, compile_pattern
from core.render.text import clip

# Atlantis' default, plus the lock file (a provider upgrade changes the plan). Relative to the project dir.
DEFAULT_WHEN_MODIFIED = ("**/*.tf*", "**/.terraform.lock.hcl")
PERMISSIONS = ("write", "maintain", "admin")
TOOLS = ("tofu", "terraform")
NAME = re.compile(r"[A-Za-z0-9._-]+")
LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
# git check-ref-format, roughly: no whitespace, control chars, `..`, `~^:?*[\\`, leading `-` or `/`.
_BRANCH = re.compile(r"(?!-)(?!/)(?!.*\.\.)(?!.*//)[^\x00-\x20\x7f~^:?*\[\\]+(?<![/.])")
BOT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\[bot\]")
TEAM = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]+")

T = TypeVar("T")


class ConfigError(ValueError):
    """One problem with one key; str() is the sentence shown in the plan comment (bounded, whatever
    the file held: it also goes to logs and status descriptions)."""

    def __init__(self, key: str, problem: str) -> None:
        key, problem = clip(key, 200), clip(problem, 1_000)
        super().__init__(f"`.plangate.yml`: {key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class ProjectConfig:
    name: str
    dir: str  # normalized, relative to the repo root; "." is the root
    workspace: str = "default"
    tool: str | None = None  # None: whichever is installed, tofu first
    when_modified: tuple[str, ...] = DEFAULT_WHEN_MODIFIED
    apply_on_merge: bool = True
    drift_schedule: str | None = None  # None: the top-level drift schedule, if any
    gate_code_at_apply: bool | None = None  # None: the top-level setting


@dataclass(frozen=True)
class DestroyApprovers:
    permission: str = "write"
    users: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()  # "org/slug"
    allow_self_approval: bool = False
    trusted_bots: tuple[str, ...] = ()  # bots whose pushes and commits carry no person's hidden change


@dataclass(frozen=True)
class DestroyRule:
    """One entry of `destroy_rules` (see core.destroy_rules for what it means)."""

    match: tuple[str, ...]
    approvals: int = 1
    users: tuple[str, ...] = ()  # with teams: who counts for this rule (empty: whoever may approve)
    teams: tuple[str, ...] = ()
    never: bool = False

    @property
    def narrowed(self) -> bool:
        return bool(self.users or self.teams)

    def label(self, index: int) -> str:
        return f"destroy_rules[{index}]"


@dataclass(frozen=True)
class RepoConfig:
    version: int = 1
    projects: tuple[ProjectConfig, ...] | None = None  # None: autodiscovery
    destroy_approvers: DestroyApprovers = field(default_factory=DestroyApprovers)
    allow_fork_prs: bool = False
    apply_branch: str | None = None  # None: the repo's default branch
    mask_patterns: tuple[str, ...] = ()  # each compiles with RE2; only the default branch's are used
    drift_schedule: str | None = None  # cron; None: no drift checks
    replan_on_base_change: bool = True  # re-plan open PRs on the merge when the apply branch moves
    destroy_rules: tuple[DestroyRule, ...] = ()
    gate_code_at_apply: bool = True  # code that runs at apply (provisioners…) needs an approval
    max_projects: int | None = None  # lowers the server's PLANGATE_MAX_PROJECTS (core/project_limit.py)

    def gates_code(self, name: str, workspace: str, dir: str) -> bool:
        """Does code that runs at apply need an approval in the project of this identity? Read on the
        default branch's config, so a pull request cannot turn the gate off for itself, nor borrow a
        switch by giving its project another's name: name, workspace and dir must all match."""
        for p in self.projects or ():
            if (p.name, p.workspace, p.dir) == (name, workspace, dir) and p.gate_code_at_apply is not None:
                return p.gate_code_at_apply
        return self.gate_code_at_apply


def _load(text: str) -> object:
    try:
        return load(text)
    except YamlError as exc:
        raise ConfigError("(file)", str(exc)) from None


def _mapping(value: object, key: str, allowed: tuple[str, ...]) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise ConfigError(key or "(file)", f"expected a mapping, got {describe(value)}")
    for k in value:
        if k not in allowed:
            name = clip(k, SHOWN) if isinstance(k, str) else shown(k)
            where = f"{key}.{name}" if key else name
            raise ConfigError(where, f"unknown key (expected one of: {', '.join(allowed)})")
    return {k: v for k, v in value.items() if v is not None}


def _typed(m: Mapping[str, object], key: str, path: str, kind: type[T], label: str, default: T) -> T:
    value = m.get(key, default)
    # bool is an int subclass: `version: true` must not pass as 1.
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(path, f"expected {label}, got {describe(value)}")
    return value


def _str_list(m: Mapping[str, object], key: str, path: str, check: Callable[[str, str], None]) -> tuple[str, ...]:
    value = m.get(key, [])
    if not isinstance(value, list):
        raise ConfigError(path, f"expected a list of strings, got {describe(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise ConfigError(f"{path}[{i}]", f"expected a string, got {describe(item)}")
        check(item, f"{path}[{i}]")
    return tuple(value)


def _matching(pattern: re.Pattern[str], what: str) -> Callable[[str, str], None]:
    def check(value: str, path: str) -> None:
        if not pattern.fullmatch(value):
            raise ConfigError(path, f"{shown(value)} is not a valid {what}")

    return check


def _glob(value: str, path: str) -> None:
    if not value or value.startswith("/") or "\\" in value:
        raise ConfigError(path, f"{shown(value)}: expected a non-empty glob relative to the project dir")


def _regex(value: str, path: str) -> None:
    try:
        compile_pattern(value)
    except PatternError as exc:
        why = clip(str(exc), 200)
        raise ConfigError(path, f"invalid regular expression {shown(value)} (RE2 syntax): {why}") from None


def _drift(m: Mapping[str, object], path: str) -> str | None:
    if "drift" not in m:
        return None
    drift = _mapping(m["drift"], path, ("schedule",))
    schedule = _typed(drift, "schedule", f"{path}.schedule", str, "a cron expression string", "")
    if not is_valid_schedule(schedule):
        raise ConfigError(f"{path}.schedule", f'invalid cron expression "{clip(schedule, SHOWN)}"')
    return schedule


def _dir(value: str, path: str) -> str:
    if not value or value.startswith("/") or "\\" in value or "\0" in value:
        raise ConfigError(path, f"{shown(value)}: expected a directory relative to the repository root")
    norm = posixpath.normpath(value)
    if norm == ".." or norm.startswith("../"):
        raise ConfigError(path, f"{shown(value)} is outside the repository")
    return norm


_PROJECT_KEYS = (
    "name",
    "dir",
    "workspace",
    "tool",
    "when_modified",
    "apply_on_merge",
    "drift",
    "gate_code_at_apply",
)


def _project(value: object, path: str) -> ProjectConfig:
    m = _mapping(value, path, _PROJECT_KEYS)
    for required in ("name", "dir"):
        if required not in m:
            raise ConfigError(f"{path}.{required}", "required")
    name = _typed(m, "name", f"{path}.name", str, "a string", "")
    _matching(NAME, "project name (letters, digits, . _ - only)")(name, f"{path}.name")
    workspace = _typed(m, "workspace", f"{path}.workspace", str, "a string", "default")
    _matching(NAME, "workspace name (letters, digits, . _ - only)")(workspace, f"{path}.workspace")
    tool = m.get("tool")
    if tool is not None and tool not in TOOLS:
        raise ConfigError(f"{path}.tool", f"expected one of {', '.join(TOOLS)}, got {describe(tool)}")
    when = (
        _str_list(m, "when_modified", f"{path}.when_modified", _glob) if "when_modified" in m else DEFAULT_WHEN_MODIFIED
    )
    return ProjectConfig(
        name=name,
        dir=_dir(_typed(m, "dir", f"{path}.dir", str, "a string", ""), f"{path}.dir"),
        workspace=workspace,
        tool=tool if isinstance(tool, str) else None,
        when_modified=when,
        apply_on_merge=_typed(m, "apply_on_merge", f"{path}.apply_on_merge", bool, "true or false", True),
        drift_schedule=_drift(m, f"{path}.drift"),
        gate_code_at_apply=(
            _typed(m, "gate_code_at_apply", f"{path}.gate_code_at_apply", bool, "true or false", True)
            if "gate_code_at_apply" in m
            else None
        ),
    )


def _projects(value: object) -> tuple[ProjectConfig, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ConfigError("projects", f"expected a list of projects, got {describe(value)}")
    if not value:
        raise ConfigError("projects", "empty list (remove the key to discover projects automatically)")
    projects = tuple(_project(item, f"projects[{i}]") for i, item in enumerate(value))
    seen: dict[str, int] = {}
    for i, p in enumerate(projects):
        if p.name in seen:
            raise ConfigError(f"projects[{i}].name", f"{shown(p.name)} is already used by projects[{seen[p.name]}]")
        seen[p.name] = i
    return projects


def _approvers(value: object) -> DestroyApprovers:
    path = "destroy_approvers"
    m = _mapping(value, path, ("permission", "users", "teams", "allow_self_approval", "trusted_bots"))
    permission = m.get("permission", "write")
    if permission not in PERMISSIONS:
        raise ConfigError(f"{path}.permission", f"expected one of {', '.join(PERMISSIONS)}, got {describe(permission)}")
    return DestroyApprovers(
        permission=str(permission),
        users=_str_list(m, "users", f"{path}.users", _matching(LOGIN, "GitHub login")),
        teams=_str_list(m, "teams", f"{path}.teams", _matching(TEAM, 'team ("org/team-slug")')),
        allow_self_approval=_typed(
            m, "allow_self_approval", f"{path}.allow_self_approval", bool, "true or false", False
        ),
        trusted_bots=_str_list(m, "trusted_bots", f"{path}.trusted_bots", _matching(BOT, 'bot login ("name[bot]")')),
    )


_RULE_KEYS = ("match", "approvals", "approvers", "never")


def _address_glob(value: str, path: str) -> None:
    if not value.strip() or value != value.strip() or value == "type:":
        raise ConfigError(path, f"{shown(value)}: expected an address glob or type:RESOURCE_TYPE")


def _destroy_rule(value: object, path: str) -> DestroyRule:
    m = _mapping(value, path, _RULE_KEYS)
    if "match" not in m:
        raise ConfigError(f"{path}.match", "required")
    match = _str_list(m, "match", f"{path}.match", _address_glob)
    if not match:
        raise ConfigError(f"{path}.match", "empty list: name the destroys this rule is about")
    never = _typed(m, "never", f"{path}.never", bool, "true or false", False)
    approvals = _typed(m, "approvals", f"{path}.approvals", int, "a number of approvals", 1)
    if not 1 <= approvals <= 10:
        raise ConfigError(f"{path}.approvals", f"expected 1 to 10, got {approvals}")
    if never and ("approvals" in m or "approvers" in m):
        raise ConfigError(f"{path}.never", "a `never` rule takes no approvals or approvers: nothing unlocks it")
    who = _mapping(m.get("approvers", {}), f"{path}.approvers", ("users", "teams"))
    return DestroyRule(
        match=match,
        approvals=approvals,
        users=_str_list(who, "users", f"{path}.approvers.users", _matching(LOGIN, "GitHub login")),
        teams=_str_list(who, "teams", f"{path}.approvers.teams", _matching(TEAM, 'team ("org/team-slug")')),
        never=never,
    )


def _destroy_rules(value: object) -> tuple[DestroyRule, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ConfigError("destroy_rules", f"expected a list of rules, got {describe(value)}")
    return tuple(_destroy_rule(item, f"destroy_rules[{i}]") for i, item in enumerate(value))


_TOP_KEYS = (
    "version",
    "projects",
    "destroy_approvers",
    "allow_fork_prs",
    "apply_branch",
    "mask_patterns",
    "drift",
    "replan_on_base_change",
    "destroy_rules",
    "gate_code_at_apply",
    "max_projects",
)


def parse_config(text: str | None, *, refused: str | None = None) -> RepoConfig:
    """Parse and validate `.plangate.yml`; None or blank text is the default config.

    `refused`: why the file was not read (a symlink): an error, never the defaults.
    """
    if refused is not None:
        raise ConfigError(".plangate.yml", refused)
    if text is None or not text.strip():
        return RepoConfig()
    data = _load(text)
    if data is None:
        return RepoConfig()
    m = _mapping(data, "", _TOP_KEYS)
    if "version" not in m:
        raise ConfigError("version", "required (the only version is 1)")
    version = m["version"]
    if version != 1 or isinstance(version, bool):
        raise ConfigError("version", f"expected 1, got {describe(version)}")
    branch = _typed(m, "apply_branch", "apply_branch", str, "a branch name", "")
    if "apply_branch" in m and not _BRANCH.fullmatch(branch):
        raise ConfigError("apply_branch", f"{shown(branch)} is not a valid branch name")
    return RepoConfig(
        version=1,
        projects=_projects(m.get("projects")),
        destroy_approvers=_approvers(m.get("destroy_approvers", {})),
        allow_fork_prs=_typed(m, "allow_fork_prs", "allow_fork_prs", bool, "true or false", False),
        apply_branch=branch or None,
        mask_patterns=_str_list(m, "mask_patterns", "mask_patterns", _regex),
        drift_schedule=_drift(m, "drift"),
        replan_on_base_change=_typed(m, "replan_on_base_change", "replan_on_base_change", bool, "true or false", True),
        destroy_rules=_destroy_rules(m.get("destroy_rules")),
        gate_code_at_apply=_typed(m, "gate_code_at_apply", "gate_code_at_apply", bool, "true or false", True),
        max_projects=_max_projects(m),
    )


def _max_projects(m: Mapping[str, object]) -> int | None:
    if "max_projects" not in m:
        return None
    value = _typed(m, "max_projects", "max_projects", int, "a number of projects", 1)
    if value < 1:
        raise ConfigError("max_projects", f"expected 1 or more, got {value}")
    return value
