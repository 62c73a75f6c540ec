"""One project's terraform pipeline, the same for PR plans, merge-time applies and drift checks.

init (same flags) → plan -out (in the project's workspace) → show -json and show (read-only plan
file) → parse; then, for applies only, apply of that very plan file (its digest checked). Every
step runs through the one `Terraform` runner, so the sandbox, env, timeout and memory cap cannot
differ between plan, apply and drift. Errors are values, never exceptions, so every caller reports.
"""

from __future__ import annotations

import contextlib
import gc
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.plan import CodeRun, Plan, PlanError, parse_plan
from core.plan_output import rendered_plan
from core.projects import Project
from core.results import ProjectResult
from workers.adapters.checkout import checkout, job_workdir, object_cache
from workers.adapters.terraform.code_files import bound_to_files
from workers.adapters.terraform.local_providers import checkout_code_runs
from workers.adapters.terraform.sandbox import SandboxError
from workers.adapters.terraform.steps import StepResult, Terraform, TerraformError

CHECKOUT_TIMEOUT = 600.0
PLANFILE = "plangate.tfplan"


class UnsafePathError(ValueError):
    """A path plangate would use leaves the checkout (or goes through a symlink); names only the path."""


@dataclass(frozen=True)
class JobDirs:
    """A job's private directories: the checkout, the plan file's own directory (outside the checkout).

    `shared`: the commit's shared read-only tree (adapters/trees.py) instead of a private checkout;
    the project's own writable copy of its directory then lives under `root`."""

    root: Path
    shared: Path | None = None

    @property
    def src(self) -> Path:
        return self.shared if self.shared is not None else self.root / "src"

    @property
    def own(self) -> Path:
        return self.root / "own"

    @property
    def planfile(self) -> Path:
        return self.root / "plan" / PLANFILE

    @property
    def scratch(self) -> Path:
        """Where a project sandbox's plan writes its file before it is sealed into `planfile`'s directory."""
        return self.root / "scratch"


@dataclass(frozen=True)
class SavedPlan:
    """What the plan steps produced: a parsed plan, or the error that stopped them."""

    plan: Plan | None
    text: str  # the saved plan as `show -no-color` renders it, or the failing step's output
    error: str | None
    planfile: Path
    digest: str | None = None
    plangate_fault: bool = False  # the failure is plangate's environment (the sandbox), not the repository's
    checkout_code_runs: tuple[CodeRun, ...] = ()  # the checkout's own: providers it brings (local_providers.py)
    source: bytes | None = field(default=None, repr=False, compare=False)  # the `show -json` parsed: a run page's diff

    @property
    def code_runs(self) -> tuple[CodeRun, ...]:
        """Everything applying this plan would run beyond the providers' planned changes: the plan's
        provisioners and external programs, and the providers the checkout brings."""
        return (self.plan.code_runs if self.plan is not None else ()) + self.checkout_code_runs


@contextlib.contextmanager
def checked_out(
    root: Path, repo_id: int, scope: str, sha: str, name: str, clone_url: str, token: str | None
) -> Iterator[JobDirs]:
    """Fetch `sha` into a fresh job directory (removed afterwards). For a deleted project, `sha` is
    the commit its code is destroyed from (`Project.destroy_from`)."""
    with _job_dirs(root, repo_id, scope, sha, name) as dirs:
        checkout(clone_url, sha, dirs.src, token, timeout=CHECKOUT_TIMEOUT, cache=object_cache(root, repo_id))
        yield dirs


def inside(src: Path, relative: str) -> Path:
    """`src/relative`, refused when any part of it is a symlink or it resolves outside `src`."""
    current = src
    for part in Path(relative).parts:
        if part in ("", "."):
            continue
        if part == "..":
            raise UnsafePathError(f"`{relative}` leaves the checkout")
        current = current / part
        if current.is_symlink():
            raise UnsafePathError(f"`{relative}` is a symlink; plangate only uses directories inside the checkout")
    resolved = current.resolve()
    if resolved != src.resolve() and src.resolve() not in resolved.parents:
        raise UnsafePathError(f"`{relative}` resolves outside the checkout")
    return current


@contextlib.contextmanager
def on_shared_tree(root: Path, tree: Path, repo_id: int, scope: str, sha: str, name: str) -> Iterator[JobDirs]:
    """A job's private directories beside the commit's shared tree `tree` (adapters/trees.py)."""
    with _job_dirs(root, repo_id, scope, sha, name, shared=tree) as dirs:
        yield dirs


@contextlib.contextmanager
def _job_dirs(
    root: Path, repo_id: int, scope: str, sha: str, name: str, shared: Path | None = None
) -> Iterator[JobDirs]:
    """A fresh job directory (removed afterwards) with the plan file's directory made."""
    with job_workdir(root, repo_id, scope, sha, name) as work:
        dirs = JobDirs(work, shared=shared)
        dirs.planfile.parent.mkdir(parents=True)
        yield dirs


def for_project(tf: Terraform, project: Project, dirs: JobDirs) -> Terraform:
    """The runner for one project: its workspace, and the checkout writable inside the sandbox (on a
    shared tree: the tree read-only, with the job's own copy of the project directory on top)."""
    env = dict(tf.env)
    if project.workspace != "default":
        env["TF_WORKSPACE"] = project.workspace
    if dirs.shared is None:
        return replace(tf, env=env, writable=(*tf.writable, dirs.src))
    target = inside(dirs.shared, project.dir)
    own = dirs.own / "project"
    if not own.exists():
        shutil.copytree(target, own, symlinks=True)
    return replace(tf, env=env, readable=(*tf.readable, dirs.shared), mounts=(*tf.mounts, (own, target)))


def plan(
    tf: Terraform, project: Project, dirs: JobDirs, *, refresh_only: bool = False, attributes: bool = False
) -> SavedPlan:
    """init → plan -out → show -json: one project's plan at the checked-out SHA (its text is the plan's
    own output, or `show` when that cannot be read safely). `refresh_only`: `plan -refresh-only`
    (`/accept-drift`), which its caller still checks before applying it. `attributes`: planned updates
    keep their changed attributes (a drift check's issue lists them)."""
    planfile = dirs.planfile
    try:
        root = inside(dirs.src, project.dir)
        if not root.is_dir():
            return SavedPlan(None, "", f"project dir `{project.dir}` does not exist at this commit", planfile)
        runs = checkout_code_runs(dirs.src, root, tf.env)  # before init writes .terraform
        tf = for_project(tf, project, dirs)
        with tf.one_sandbox(root, dirs.scratch, planfile.parent, dirs.root) as tf:
            init = tf.init(root)
            if not init.ok:
                return SavedPlan(None, init.output, init.failure(), planfile, checkout_code_runs=runs)
            step = tf.plan(root, planfile, destroy=project.destroy_from is not None, refresh_only=refresh_only)
            if not step.ok:
                return SavedPlan(None, step.output, step.failure(), planfile, checkout_code_runs=runs)
            text = None if step.result.truncated else rendered_plan(step.result.stdout.decode("utf-8", "replace"))
            if text is None:
                raw, text = tf.show_both(root, planfile)
            else:
                raw = tf.show_json(root, planfile)
        with gc_paused():
            parsed = parse_plan(raw, attributes=attributes)
        own = dirs.own / "project" if dirs.shared is not None else root  # where this job's .terraform is
        parsed = bound_to_files(parsed, root, own, dirs.src)
        return SavedPlan(parsed, text, None, planfile, step.digest, checkout_code_runs=runs, source=raw)
    except UnsafePathError as exc:
        return SavedPlan(None, "", f"project dir refused: {exc}", planfile)
    except SandboxError as exc:
        return SavedPlan(None, "", str(exc), planfile, plangate_fault=True)
    except (TerraformError, PlanError) as exc:
        return SavedPlan(None, str(exc), str(exc), planfile)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection while a plan's JSON becomes objects: every container it makes stays alive,
    so the collections its allocations set off find nothing, and take a large share of a big plan's parse."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def apply(tf: Terraform, project: Project, dirs: JobDirs, planned: SavedPlan) -> StepResult:
    """Apply exactly the plan file `plan` checked (the runner refuses one whose digest changed)."""
    tf = for_project(tf, project, dirs)
    return tf.apply(inside(dirs.src, project.dir), planned.planfile, planned.digest)


def result(project: Project, sha: str, tool: str, planned: SavedPlan) -> ProjectResult:
    """The plan as the comment renderers take it."""
    return ProjectResult(
        name=project.name,
        dir=project.dir,
        workspace=project.workspace,
        tool=Path(tool).name,
        sha=sha,
        plan=planned.plan,
        plan_text=planned.text if planned.plan is not None else "",
        error=planned.error,
        plangate_fault=planned.plangate_fault,
        destroy_from=project.destroy_from,
        checkout_code_runs=planned.checkout_code_runs,
    )


def failure(project: Project, sha: str, error: str, *, plangate_fault: bool = False) -> ProjectResult:
    """A project that could not be planned at all (checkout failed, superseded, ...)."""
    return ProjectResult(
        name=project.name,
        dir=project.dir,
        workspace=project.workspace,
        tool=project.tool or "terraform",
        sha=sha,
        plan=None,
        error=error,
        plangate_fault=plangate_fault,
        destroy_from=project.destroy_from,
    )
