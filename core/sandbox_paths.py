"""`PLANGATE_SANDBOX` and the `PLANGATE_SANDBOX_PATHS*` settings as values (pure): what the settings
read and the terraform sandbox (workers.adapters.terraform.sandbox) uses.

A plan runs the pull request's code, so a host path is writable to it only when the operator says
so for plans: `PLANGATE_SANDBOX_PATHS` grants its paths to both phases, but its `:rw` only to the
apply phase; `PLANGATE_SANDBOX_PATHS_PLAN` and `PLANGATE_SANDBOX_PATHS_APPLY` add paths to one
phase, as written. A path granted more than once is writable when any of its grants in that phase
is; nested grants are mounted parents first, so the most specific one decides what is under it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

MODES = ("bwrap", "off")
SETTING = "PLANGATE_SANDBOX_PATHS"
# plan: every plan (PR plans, drift checks, a merge's plan: they never write state); apply: `terraform apply`.
GrantPhase = Literal["plan", "apply"]
GRANT_PHASES: tuple[GrantPhase, ...] = ("plan", "apply")


@dataclass(frozen=True)
class Grant:
    """A host path the operator makes visible inside the sandbox."""

    path: Path
    writable: bool = False


def parse_grants(value: str) -> tuple[Grant, ...]:
    """`"/srv/state:rw, /etc/aws"` → grants; ValueError naming the bad item."""
    grants = []
    for item in (part.strip() for part in value.split(",")):
        if not item:
            continue
        path, writable = (item[:-3], True) if item.endswith(":rw") else (item.removesuffix(":ro"), False)
        if not path.startswith("/"):
            raise ValueError(f"{item!r} is not an absolute path")
        if ":" in path:
            raise ValueError(f"{item!r}: only :rw or :ro may follow a path")
        grants.append(Grant(Path(os.path.normpath(path)), writable))
    return tuple(grants)


def merged(grants: Iterable[Grant]) -> tuple[Grant, ...]:
    """One grant per path (writable if any grant of it is), parents before what they contain."""
    writable: dict[Path, bool] = {}
    for grant in grants:
        writable[grant.path] = writable.get(grant.path, False) or grant.writable
    return tuple(Grant(path, rw) for path, rw in sorted(writable.items(), key=lambda item: len(item[0].parts)))


@dataclass(frozen=True)
class SandboxPaths:
    """The three settings as the operator wrote them; `grants(phase)` is what a phase's sandbox shows."""

    common: tuple[Grant, ...] = ()  # PLANGATE_SANDBOX_PATHS
    plan: tuple[Grant, ...] = ()  # PLANGATE_SANDBOX_PATHS_PLAN
    apply: tuple[Grant, ...] = ()  # PLANGATE_SANDBOX_PATHS_APPLY

    def by_setting(self, phase: GrantPhase) -> tuple[tuple[str, tuple[Grant, ...]], ...]:
        """(setting, its grants as `phase` gets them): the common ones read-only to plans."""
        if phase == "plan":
            shown = tuple(replace(grant, writable=False) for grant in self.common)
            return (SETTING, shown), (f"{SETTING}_PLAN", self.plan)
        return (SETTING, self.common), (f"{SETTING}_APPLY", self.apply)

    def grants(self, phase: GrantPhase) -> tuple[Grant, ...]:
        return merged(grant for _, grants in self.by_setting(phase) for grant in grants)

    @property
    def every(self) -> tuple[Grant, ...]:
        """Every path either phase is granted, writable if either may write it (checked at start-up)."""
        return merged((*self.grants("plan"), *self.grants("apply")))

    def setting_of(self, path: Path) -> str:
        """The first setting that names `path` (for an error about it)."""
        written = ((SETTING, self.common), (f"{SETTING}_PLAN", self.plan), (f"{SETTING}_APPLY", self.apply))
        return next((name for name, grants in written if any(g.path == path for g in grants)), SETTING)
