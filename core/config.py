"""`.plangate.yml` text → RepoConfig (pure). Strict: every mistake is a ConfigError naming its key.

A typo must never be silently ignored (an unknown `destroy_approver:` key would otherwise
widen who may approve), so unknown keys, wrong types and duplicate keys are errors. A key
whose value is null (`projects:` with nothing after it) takes its default. No file, or an
empty one, is the default config: no `projects` list, so projects are autodiscovered.
The YAML is read by core.config_yaml (bounded), its shape checked by core.config_schema (msgspec).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from core.config_credentials import Credentials
from core.config_schema import ConfigError as ConfigError
from core.config_schema import FileConfig, FileProject, FileRule, read
from core.config_yaml import YamlError, load

# Atlantis' default, plus the lock file (a provider upgrade changes the plan). Relative to the project dir.
DEFAULT_WHEN_MODIFIED = ("**/*.tf*", "**/.terraform.lock.hcl")


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
    depends_on: tuple[str, ...] = ()  # projects applied before this one on merge (core.apply_order)
    credentials: Credentials | None = None  # OIDC identities per phase (core.config_credentials)


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
class ChangeRule:
    """One entry of `change_rules`: a destroy rule for the `actions` it names (core.change_rules)."""

    match: tuple[str, ...]
    actions: tuple[str, ...] = ("delete", "replace")
    approvals: int = 1
    users: tuple[str, ...] = ()
    teams: tuple[str, ...] = ()
    never: bool = False

    @property
    def narrowed(self) -> bool:
        return bool(self.users or self.teams)

    def label(self, index: int) -> str:
        return f"change_rules[{index}]"


@dataclass(frozen=True)
class ChangeLimits:
    """`change_limits`: a PR's plan past a limit is gated until approved (core.change_rules)."""

    max_destroys: int | None = None
    max_projects: int | None = None
    approvals: int = 1
    users: tuple[str, ...] = ()  # with teams: who counts for the limits (empty: whoever may approve)
    teams: tuple[str, ...] = ()
    never: bool = False  # a limit is always approvable; here so that a limit reads like a rule

    @property
    def narrowed(self) -> bool:
        return bool(self.users or self.teams)

    def label(self, index: int) -> str:
        return "change_limits"


Rule = DestroyRule | ChangeRule | ChangeLimits  # what core.destroy_rules weighs approvals against


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
    plan_dependents: bool = False  # a PR also plans the dependents of the projects it changes
    change_rules: tuple[ChangeRule, ...] = ()
    change_limits: ChangeLimits | None = None

    @property
    def rules(self) -> tuple[Rule, ...]:
        """Every rule an approval is weighed against, by index: destroy rules, change rules, the limits."""
        return (*self.destroy_rules, *self.change_rules, *((self.change_limits,) if self.change_limits else ()))

    def gates_code(self, name: str, workspace: str, dir: str) -> bool:
        """Does code that runs at apply need an approval in the project of this identity? Read on the
        default branch's config, so a pull request cannot turn the gate off for itself, nor borrow a
        switch by giving its project another's name: name, workspace and dir must all match."""
        for p in self.projects or ():
            if (p.name, p.workspace, p.dir) == (name, workspace, dir) and p.gate_code_at_apply is not None:
                return p.gate_code_at_apply
        return self.gate_code_at_apply


def parse_config(text: str | None, *, refused: str | None = None) -> RepoConfig:
    """Parse and validate `.plangate.yml`; None or blank text is the default config.

    `refused`: why the file was not read (a symlink): an error, never the defaults.
    """
    if refused is not None:
        raise ConfigError(".plangate.yml", refused)
    if text is None or not text.strip():
        return RepoConfig()
    try:
        data = load(text)
    except YamlError as exc:
        raise ConfigError("(file)", str(exc)) from None
    return RepoConfig() if data is None else _config(read(data))


def _config(f: FileConfig) -> RepoConfig:
    a = f.destroy_approvers
    return RepoConfig(
        projects=None if f.projects is None else tuple(_project(p) for p in f.projects),
        destroy_approvers=DestroyApprovers(a.permission, a.users, a.teams, a.allow_self_approval, a.trusted_bots),
        allow_fork_prs=f.allow_fork_prs,
        apply_branch=f.apply_branch,
        mask_patterns=f.mask_patterns,
        drift_schedule=f.drift.schedule if f.drift else None,
        replan_on_base_change=f.replan_on_base_change,
        destroy_rules=tuple(
            DestroyRule(
                r.match,
                r.approvals or 1,
                r.approvers.users if r.approvers else (),
                r.approvers.teams if r.approvers else (),
                r.never,
            )
            for r in f.destroy_rules
        ),
        gate_code_at_apply=f.gate_code_at_apply,
        max_projects=f.max_projects,
        plan_dependents=f.plan_dependents,
        change_rules=tuple(
            ChangeRule(r.match, r.actions, r.approvals or 1, *_approvers(r), r.never) for r in f.change_rules
        ),
        change_limits=_limits(f),
    )


def _approvers(r: FileRule) -> tuple[tuple[str, ...], tuple[str, ...]]:
    return (r.approvers.users, r.approvers.teams) if r.approvers else ((), ())


def _limits(f: FileConfig) -> ChangeLimits | None:
    c = f.change_limits
    if c is None:
        return None
    users, teams = (c.approvers.users, c.approvers.teams) if c.approvers else ((), ())
    return ChangeLimits(c.max_destroys, c.max_projects, c.approvals or 1, users, teams)


def _project(p: FileProject) -> ProjectConfig:
    return ProjectConfig(
        name=p.name,
        dir=posixpath.normpath(p.dir),
        workspace=p.workspace,
        tool=p.tool,
        when_modified=DEFAULT_WHEN_MODIFIED if p.when_modified is None else p.when_modified,
        apply_on_merge=p.apply_on_merge,
        drift_schedule=p.drift.schedule if p.drift else None,
        gate_code_at_apply=p.gate_code_at_apply,
        depends_on=p.depends_on,
        credentials=p.credentials,
    )
