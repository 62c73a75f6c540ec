"""What `.plangate.yml` may hold, as msgspec Structs, and the ConfigError naming the key of a mistake (pure).

msgspec checks the shape: unknown keys (a typo such as `destroy_approver:` must never be ignored, it
would widen who may approve), missing keys and wrong types, each at its path (`$.projects[0].name`).
What a type cannot say (a name's characters, a dir inside the repository, a cron expression, an RE2
regex…) each Struct checks in `__post_init__`, raising ValueError("field: problem"), which msgspec
reports at the Struct's path. `read` turns either into a ConfigError worded for people.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, Literal, get_args

import msgspec

from core.apply_order import cycle
from core.config_credentials import STRUCTS as CREDENTIAL_STRUCTS
from core.config_credentials import Credentials
from core.cron import is_valid_schedule
from core.quoted import SHOWN, describe, shown
from core.render.mask import PatternError, compile_pattern
from core.render.text import clip

Tool = Literal["tofu", "terraform"]
Permission = Literal["write", "maintain", "admin"]
NAME = re.compile(r"[A-Za-z0-9._-]+")
LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})")
# git check-ref-format, roughly: no whitespace, control chars, `..`, `~^:?*[\\`, leading `-` or `/`.
BRANCH = re.compile(r"(?!-)(?!/)(?!.*\.\.)(?!.*//)[^\x00-\x20\x7f~^:?*\[\\]+(?<![/.])")
BOT = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})\[bot\]")
TEAM = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]+")


class ConfigError(ValueError):
    """One problem with one key; str() is the sentence shown in the plan comment (bounded, whatever
    the file held: it also goes to logs and status descriptions)."""

    def __init__(self, key: str, problem: str) -> None:
        key, problem = clip(key, 200), clip(problem, 1_000)
        super().__init__(f"`.plangate.yml`: {key}: {problem}")
        self.key = key
        self.problem = problem


def _invalid(field: str, problem: str) -> ValueError:
    return ValueError(f"{field}: {problem}")


def _check(value: str, field: str, pattern: re.Pattern[str], what: str) -> None:
    if not pattern.fullmatch(value):
        raise _invalid(field, f"{shown(value)} is not a valid {what}")


def _each(values: tuple[str, ...], field: str, pattern: re.Pattern[str], what: str) -> None:
    for i, value in enumerate(values):
        _check(value, f"{field}[{i}]", pattern, what)


class _Strict(msgspec.Struct, forbid_unknown_fields=True):
    """A mapping of `.plangate.yml`: a key it does not declare is an error."""


class FileDrift(_Strict):
    schedule: str = ""

    def __post_init__(self) -> None:
        if not is_valid_schedule(self.schedule):
            raise _invalid("schedule", f'invalid cron expression "{clip(self.schedule, SHOWN)}"')


class FileProject(_Strict):
    name: str
    dir: str
    workspace: str = "default"
    tool: Tool | None = None
    when_modified: tuple[str, ...] | None = None  # None: the default globs
    apply_on_merge: bool = True
    drift: FileDrift | None = None
    gate_code_at_apply: bool | None = None
    depends_on: tuple[str, ...] = ()  # names of projects of the same file, applied before this one
    credentials: Credentials | None = None  # the cloud identity each phase's OIDC token is for

    def __post_init__(self) -> None:
        _check(self.name, "name", NAME, "project name (letters, digits, . _ - only)")
        _check(self.workspace, "workspace", NAME, "workspace name (letters, digits, . _ - only)")
        for i, glob in enumerate(self.when_modified or ()):
            if not glob or glob.startswith("/") or "\\" in glob:
                problem = f"{shown(glob)}: expected a non-empty glob relative to the project dir"
                raise _invalid(f"when_modified[{i}]", problem)
        if not self.dir or self.dir.startswith("/") or "\\" in self.dir or "\0" in self.dir:
            raise _invalid("dir", f"{shown(self.dir)}: expected a directory relative to the repository root")
        norm = posixpath.normpath(self.dir)
        if norm == ".." or norm.startswith("../"):
            raise _invalid("dir", f"{shown(self.dir)} is outside the repository")


class FileApprovers(_Strict):
    permission: Permission = "write"
    users: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    allow_self_approval: bool = False
    trusted_bots: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _each(self.users, "users", LOGIN, "GitHub login")
        _each(self.teams, "teams", TEAM, 'team ("org/team-slug")')
        _each(self.trusted_bots, "trusted_bots", BOT, 'bot login ("name[bot]")')


class FileRuleApprovers(_Strict):
    users: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _each(self.users, "users", LOGIN, "GitHub login")
        _each(self.teams, "teams", TEAM, 'team ("org/team-slug")')


class FileRule(_Strict):
    match: tuple[str, ...]
    approvals: int | None = None  # None: 1
    approvers: FileRuleApprovers | None = None
    never: bool = False

    def __post_init__(self) -> None:
        for i, glob in enumerate(self.match):
            if not glob.strip() or glob != glob.strip() or glob == "type:":
                raise _invalid(f"match[{i}]", f"{shown(glob)}: expected an address glob or type:RESOURCE_TYPE")
        if not self.match:
            raise _invalid("match", "empty list: name the destroys this rule is about")
        if self.approvals is not None and not 1 <= self.approvals <= 10:
            raise _invalid("approvals", f"expected 1 to 10, got {shown(self.approvals)}")
        if self.never and (self.approvals is not None or self.approvers is not None):
            raise _invalid("never", "a `never` rule takes no approvals or approvers: nothing unlocks it")


Action = Literal["delete", "replace", "create", "update", "read"]


class FileChangeRule(FileRule):
    """A destroy rule that names the actions it gates; by default the destroys (delete, replace)."""

    actions: tuple[Action, ...] = ("delete", "replace")

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.actions:
            raise _invalid("actions", f"empty list: name the actions this rule gates ({', '.join(get_args(Action))})")


class FileChangeLimits(_Strict):
    """Per-PR limits that gate a plan exceeding them, and who may approve that."""

    max_destroys: int | None = None
    max_projects: int | None = None
    approvals: int | None = None  # None: 1
    approvers: FileRuleApprovers | None = None

    def __post_init__(self) -> None:
        for key in ("max_destroys", "max_projects"):
            value = getattr(self, key)
            if value is not None and value < 0:
                raise _invalid(key, f"expected 0 or more, got {shown(value)}")
        if self.max_destroys is None and self.max_projects is None:
            raise _invalid("max_destroys", "required (with or instead of max_projects): a limit to gate on")
        if self.approvals is not None and not 1 <= self.approvals <= 10:
            raise _invalid("approvals", f"expected 1 to 10, got {shown(self.approvals)}")


class FileConfig(_Strict):
    version: int | float | None = None  # required, but said after the shape: "the only version is 1"
    projects: tuple[FileProject, ...] | None = None  # None: autodiscovery
    destroy_approvers: FileApprovers = msgspec.field(default_factory=FileApprovers)
    allow_fork_prs: bool = False
    apply_branch: str | None = None
    mask_patterns: tuple[str, ...] = ()
    drift: FileDrift | None = None
    replan_on_base_change: bool = True
    destroy_rules: tuple[FileRule, ...] = ()
    gate_code_at_apply: bool = True
    max_projects: int | None = None
    plan_dependents: bool = False
    change_rules: tuple[FileChangeRule, ...] = ()
    change_limits: FileChangeLimits | None = None

    def __post_init__(self) -> None:
        if self.version is None:
            raise _invalid("version", "required (the only version is 1)")
        if self.version != 1:
            raise _invalid("version", f"expected 1, got {describe(self.version)}")
        if self.projects == ():
            raise _invalid("projects", "empty list (remove the key to discover projects automatically)")
        seen: dict[str, int] = {}
        for i, project in enumerate(self.projects or ()):
            if project.name in seen:
                problem = f"{shown(project.name)} is already used by projects[{seen[project.name]}]"
                raise _invalid(f"projects[{i}].name", problem)
            seen[project.name] = i
        if self.apply_branch is not None:
            _check(self.apply_branch, "apply_branch", BRANCH, "branch name")
        for i, pattern in enumerate(self.mask_patterns):
            try:
                compile_pattern(pattern)
            except PatternError as exc:
                why = f"invalid regular expression {shown(pattern)} (RE2 syntax): {clip(str(exc), 200)}"
                raise _invalid(f"mask_patterns[{i}]", why) from None
        if self.max_projects is not None and self.max_projects < 1:
            raise _invalid("max_projects", f"expected 1 or more, got {shown(self.max_projects)}")
        _check_depends_on(self.projects or ())


def _check_depends_on(projects: tuple[FileProject, ...]) -> None:
    """Each `depends_on` names another project of the file, and no chain of them comes back to where
    it started: a merge could never apply such projects in order."""
    names = {p.name for p in projects}
    for i, project in enumerate(projects):
        for j, name in enumerate(project.depends_on):
            if name == project.name:
                raise _invalid(f"projects[{i}].depends_on[{j}]", f"{shown(name)}: a project cannot depend on itself")
            if name not in names:
                raise _invalid(f"projects[{i}].depends_on[{j}]", f"{shown(name)} is not a project of this file")
    loop = cycle({p.name: p.depends_on for p in projects})
    if loop is not None:
        raise _invalid("depends_on", f"cycle {' → '.join(clip(name, SHOWN) for name in loop)}")


class _Document(msgspec.Struct):
    """The file under one key, so that every error msgspec raises ends with a path no key name can fake."""

    file: FileConfig


def read(data: object) -> FileConfig:
    """Loaded YAML → FileConfig; ConfigError naming the key. A null value takes its key's default."""
    data = _without_nulls(data)
    try:
        return msgspec.convert({"file": data}, _Document).file
    except msgspec.ValidationError as exc:
        raise _config_error(str(exc), data) from None


# Keys whose default a null must not quietly stand for: `actions:` left empty in a change rule would make
# a rule meant for updates one about destroys alone (`actions: []` is refused too).
_NULL_REFUSED = frozenset({("change_rules", "actions")})


def _without_nulls(value: object, under: str = "") -> object:
    """A declared key whose value is null (`projects:` with nothing after it) is as if absent, except
    those of _NULL_REFUSED; an undeclared one stays, to be refused. Walks only the mappings the file
    declares, so never deep."""
    if isinstance(value, list):
        return [_without_nulls(item, under) if isinstance(item, dict) else item for item in value]
    if not isinstance(value, dict) or under not in _STRUCTS:
        return value
    fields = _STRUCTS[under].__struct_fields__
    return {
        k: v if k not in fields else _without_nulls(v, k)
        for k, v in value.items()
        if v is not None or k not in fields or (under, k) in _NULL_REFUSED
    }


# "expected …" for the keys whose type alone would say too little, then for each of msgspec's types.
_LABELS = {
    "version": "1",
    "tool": f"one of {', '.join(get_args(Tool))}",
    "permission": f"one of {', '.join(get_args(Permission))}",
    "schedule": "a cron expression string",
    "apply_branch": "a branch name",
    "approvals": "a number of approvals",
    "max_projects": "a number of projects",
    "projects": "a list of projects",
    "destroy_rules": "a list of rules",
    "change_rules": "a list of rules",
    "actions": f"a list of {', '.join(get_args(Action))}",
    "max_destroys": "a number of destroys",
}
_ITEM_LABELS = {"actions": f"one of {', '.join(get_args(Action))}"}
_KINDS = {
    "str": "a string",
    "int": "a number",
    "bool": "true or false",
    "array": "a list of strings",
    "object": "a mapping",
}
# The Struct a mapping is read as, by the key it stands under ("" for the file itself).
_STRUCTS: dict[str, type[msgspec.Struct]] = {
    "": FileConfig,
    "projects": FileProject,
    "drift": FileDrift,
    "destroy_approvers": FileApprovers,
    "destroy_rules": FileRule,
    "approvers": FileRuleApprovers,
    "change_rules": FileChangeRule,
    "change_limits": FileChangeLimits,
    **CREDENTIAL_STRUCTS,
}
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")
_UNKNOWN = "Object contains unknown field `"
_MISSING = "Object missing required field `"


def _config_error(message: str, data: object) -> ConfigError:
    """msgspec's "Expected `str`, got `int` - at `$.file.projects[0].name`" → ConfigError(
    "projects[0].name", "expected a string, got number 5"), and likewise for unknown and missing keys."""
    message, _, where = message.rpartition(" - at `")
    bad_key = where.startswith("key` in `")  # a key that is not a string: unknown too
    path = where.removeprefix("key` in `").removeprefix("$.file").removesuffix("`")
    steps = [name or int(index) for name, index in _STEP.findall(path)]
    path = path.removeprefix(".")
    value: Any = data
    for step in steps:
        value = value[step]  # msgspec's path leads to the value it found wrong
    if bad_key or message.startswith(_UNKNOWN):
        key = next(k for k in value if not isinstance(k, str)) if bad_key else message.removeprefix(_UNKNOWN)[:-1]
        under = [step for step in steps if isinstance(step, str)]
        allowed = ", ".join(_STRUCTS[under[-1] if under else ""].__struct_fields__)
        name = clip(key, SHOWN) if isinstance(key, str) else shown(key)
        return ConfigError(_join(path, name), f"unknown key (expected one of: {allowed})")
    if message.startswith(_MISSING):
        return ConfigError(_join(path, message.removeprefix(_MISSING)[:-1]), "required")
    if message.startswith(("Expected `", "Invalid enum value")):
        kind = message.removeprefix("Expected `").partition("`")[0].split(" ")[0]
        label = _LABELS.get(str(steps[-1]) if steps else "", _KINDS.get(kind, "another value"))
        if len(steps) > 1 and isinstance(steps[-1], int):  # an item of a list: its list's key says what it may be
            label = _ITEM_LABELS.get(str(steps[-2]), label)
        return ConfigError(path or "(file)", f"expected {label}, got {describe(value)}")
    field, _, problem = message.partition(": ")  # raised by a __post_init__
    return ConfigError(_join(path, field), problem)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
