"""One project's planning outcome (pure data): what plans, applies and drift checks produce and every
renderer and gate decision reads."""

from __future__ import annotations

from dataclasses import dataclass

from core.plan import CodeRun, Plan
from core.projects import project_identity


@dataclass(frozen=True)
class ProjectResult:
    """One project's planning outcome at one SHA; `error` holds init/plan output when it failed."""

    name: str
    dir: str
    workspace: str
    tool: str  # "terraform" | "tofu"
    sha: str  # 40 hex
    plan: Plan | None
    plan_text: str = ""  # the saved plan as `show -no-color` renders it (read from the plan's own output)
    error: str | None = None
    plangate_fault: bool = False  # the error is plangate's environment (e.g. the sandbox), not the repository's
    destroy_from: str | None = None  # the project was deleted: this is `plan -destroy` of its code there
    carried_from: str | None = None  # its inputs did not change since this SHA: the plan made there, kept
    checkout_code_runs: tuple[CodeRun, ...] = ()  # providers the checkout brings (adapters' local_providers)

    @property
    def identity(self) -> str:
        return project_identity(self.name, self.workspace, self.dir)

    @property
    def code_runs(self) -> tuple[CodeRun, ...]:
        """Everything an apply of this result would run beyond the providers' planned changes: the plan's
        provisioners and external programs, and the providers the checkout brings."""
        return (self.plan.code_runs if self.plan is not None else ()) + self.checkout_code_runs

    @property
    def secrets(self) -> tuple[str, ...]:
        if self.plan is None:
            return ()
        changes = self.plan.changes + self.plan.drift
        return tuple(v for c in changes for v in c.sensitive_values)


@dataclass(frozen=True)
class BatchResult:
    """What a job that planned several projects in turn made: a result per project it planned, and for
    each project whose slot was busy, the id of the job of its own that plans it instead."""

    results: dict[str, ProjectResult]  # by project identity
    delegated: dict[str, str]  # project identity → job id
