"""The terraform/tofu steps plangate runs (init, plan, show, apply), each through the one runner.

Every step gets the same env, timeout, memory cap and sandbox (workers/adapters/terraform/runner.py
runs the process); what differs is which paths a step may write: the plan file's scratch directory
for `plan` only, the plugin cache for an init in its turn only. A project's init, plan and show share
one sandbox where they can (`Terraform.one_sandbox`, sandbox_session.py), each step printing into FIFOs
of its own. Sandboxed, the plan writes into the scratch directory and its file is sealed (copied into a
new file) where no step can write it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from workers.adapters.live_output import LiveOutput, step_line
from workers.adapters.terraform import project_sandbox, sandbox_session
from workers.adapters.terraform.cgroups import JOIN_FAILED, CgroupRoot
from workers.adapters.terraform.oidc_tokens import Grant
from workers.adapters.terraform.runner import DEFAULT_MAX_OUTPUT, RunResult, Watch, resolve_executable, run
from workers.adapters.terraform.sandbox import Sandbox, SandboxError
from workers.adapters.terraform.step_result import (
    StepResult,
    TerraformError,
    capped_note,
    file_digest,
    require,
)

__all__ = ["StepResult", "Terraform", "TerraformError", "capped_note", "file_digest"]


@dataclass(frozen=True)
class Terraform:
    """The terraform/tofu steps plangate runs, each under the same env, timeout, memory cap and sandbox.

    `writable` are the paths every step may write inside the sandbox (the job's checkout); the plan
    file's directory is read-only to every step (`plan` writes into `scratch`). The plugin cache
    is read-only to every step but an init that had to write it (in its turn, `init_lock`, unless the
    tool locks the cache itself): a plan's code cannot swap a provider binary under another job's feet,
    and an init that finds what it needs in the cache (a locked, warm cache, or no provider to install)
    takes no turn.
    """

    tool: str  # "tofu" | "terraform" (or a path to either)
    env: dict[str, str]
    timeout: float = 1800.0
    memory_limit_bytes: int | None = 4096 * 1024 * 1024
    grace: float = 10.0
    max_output: int = DEFAULT_MAX_OUTPUT
    # show -json must be read whole, or not at all: past this the plan is refused (its comment says so).
    # Reading and parsing one takes ~2× its size in the worker (docs/limits.md): ~1.1 GiB at the cap.
    max_json: int = 512 * 1024 * 1024
    init_lock: Path | None = None  # held by an init that writes the plugin cache (unsafe for concurrent inits)
    cache_is_concurrent: bool = False  # OpenTofu ≥ 1.10.5 locks its cache itself: no turn (tool_version.py)
    plugin_cache: Path | None = None
    sandbox: Sandbox = field(default_factory=Sandbox)
    cgroups: CgroupRoot | None = None  # where each step gets a memory cgroup of its own, if anywhere
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # shown read-only to every step (a shared tree of the commit)
    mounts: tuple[tuple[Path, Path], ...] = ()  # (source, target): writable over what `readable` shows
    # False for the plan phase (PR plans, drift checks): their `plan` runs with -lock=false, and so
    # reads a local state in a directory granted read-only, where taking the lock fails ("Error
    # acquiring the state lock": the local backend writes its lock file beside the state); both are
    # run with real terraform in tests/test_sandbox.py. The lock guards nothing there: such a plan
    # never writes state, and plangate runs one step at a time per project anyway (the RQ RateLimit
    # a project's plan, apply and drift jobs share). With a remote backend, a plan's read-only
    # credentials then need no write access to a lock table either. Apply-phase steps lock.
    lock_state: bool = True
    oidc: Grant | None = None  # the project's cloud identity for this phase: a fresh token per step
    # Where init, plan and apply stream what they print, each headed by `$ terraform …` (a run page);
    # `show` is not streamed: its text is the plan the page draws already, its JSON data.
    live: LiveOutput | None = None
    box: sandbox_session.Session | None = None  # the project sandbox its steps run in (one_sandbox), if one
    scratch: Path | None = None  # where `plan` writes its file before it is sealed (one_sandbox), if anywhere

    @contextlib.contextmanager
    def one_sandbox(self, workdir: Path, scratch: Path, sealed: Path, under: Path) -> Iterator[Terraform]:
        """This runner with init, plan and show in one sandbox (sandbox_session.py): `plan` writes into
        `scratch`, and its file is then sealed into `sealed`
        (read-only to the sandbox). A sandbox per step where there is no supervisor or the steps have an
        OIDC identity (a fresh token each), its plan file written and sealed the same way. `under`:
        where the sandbox's control directory goes."""
        if not self.sandbox.enabled:
            yield self
            return
        if self.sandbox.supervisor is None or self.oidc is not None:
            scratch.mkdir(parents=True, exist_ok=True)
            yield replace(self, scratch=scratch)
            return
        exe = resolve_executable(self.tool, self.env)
        cache = () if self.plugin_cache is None else (self.plugin_cache,)
        shown = project_sandbox.Shown(
            writable=self.writable,
            readable=(*self.readable, *cache, sealed, *([] if self.sandbox.shows(exe) else [Path(exe)])),
            mounts=self.mounts,
        )
        with project_sandbox.opened(
            self.sandbox,
            workdir=workdir,
            under=under,
            scratch=scratch,
            env=self.env,
            shown=shown,
            memory_limit_bytes=self.memory_limit_bytes,
            cgroups=self.cgroups,
        ) as box:
            yield replace(self, box=box, scratch=scratch)

    def _run(
        self,
        workdir: Path,
        args: list[str],
        max_output: int | None = None,
        *,
        writable: tuple[Path, ...] = (),
        readable: tuple[Path, ...] = (),
        stream: bool = False,
    ) -> RunResult:
        with self.oidc.step(self.timeout) if self.oidc is not None else _no_identity() as (added, tokens):
            shown = (*readable, *([tokens] if tokens else []))
            return self._run_as(workdir, args, max_output, writable, shown, added, stream)

    def _run_as(
        self,
        workdir: Path,
        args: list[str],
        max_output: int | None,
        writable: tuple[Path, ...],
        readable: tuple[Path, ...],
        added: dict[str, str],
        stream: bool,
    ) -> RunResult:
        env = {**self.env, **added}
        exe = resolve_executable(self.tool, env)
        cache = () if self.plugin_cache is None or self.plugin_cache in writable else (self.plugin_cache,)
        live = self.live if stream else None
        if live is not None:
            live.step(step_line(self.tool, args))
        if self.box is not None and self.box.covers(writable, readable, env):
            watch = Watch(self.timeout, self.grace, max_output or self.max_output, True, live)
            result = self.box.run([exe, *args], workdir, watch)
        else:
            argv = self.sandbox.wrap(
                [exe, *args],
                cwd=workdir,
                writable=[*self.writable, *writable],
                readable=[*self.readable, *cache, *readable],
                mounts=self.mounts,
            )
            result = run(
                argv,
                cwd=workdir,
                env=env,
                timeout=self.timeout,
                memory_limit_bytes=self.memory_limit_bytes,
                grace=self.grace,
                max_output=max_output or self.max_output,
                spare_leader=self.sandbox.enabled,
                cgroups=self.cgroups,
                on_output=live,
            )
        if live is not None:
            live.end_step()
        if self.sandbox.enabled and result.returncode != 0 and result.stderr.startswith(b"bwrap: "):
            why = result.stderr.decode("utf-8", "replace").strip().splitlines()[0]
            raise SandboxError(f"setting PLANGATE_SANDBOX: the sandbox could not start ({why})")
        if self.cgroups is not None and result.stderr.startswith(JOIN_FAILED):
            why = result.stderr.decode("utf-8", "replace").strip().splitlines()[0]
            raise SandboxError(f"setting PLANGATE_TF_CGROUP: the step's memory cap could not be set ({why})")
        return replace(result, argv=tuple([self.tool, *args]))

    def init(self, workdir: Path) -> StepResult:
        """init with the plugin cache read-only first (sandboxed, nothing else can make it so); only an
        init that had to install into it runs again with the cache writable, its turn taken unless the
        tool locks the cache itself."""
        args = ["init", "-input=false", "-no-color"]
        cache = () if self.plugin_cache is None else (self.plugin_cache,)
        if self.init_lock is None:
            return StepResult("init", self._run(workdir, args, writable=cache, stream=True))
        if self.sandbox.enabled and self.plugin_cache is not None:
            first = self._run(workdir, args, stream=True)
            if first.ok or first.timed_out or not _cache_in_the_way(first, self.plugin_cache):
                return StepResult("init", first)
        if self.cache_is_concurrent:
            return StepResult("init", self._run(workdir, args, writable=cache, stream=True))
        with self.init_lock.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the job dies
            return StepResult("init", self._run(workdir, args, writable=cache, stream=True))

    def plan(self, workdir: Path, out: Path, *, destroy: bool = False, refresh_only: bool = False) -> StepResult:
        """`plan -detailed-exitcode`: 0 no changes, 2 changes, anything else (1) an error.
        `destroy`: plan the destruction of everything the configuration manages (a deleted project).
        `refresh_only`: plan only to record reality in the state (`/accept-drift`), never a change to it."""
        if destroy and refresh_only:
            raise ValueError("a plan is either a destroy or refresh-only, never both")
        args = [
            "plan",
            "-input=false",
            "-no-color",
            "-detailed-exitcode",
            *([] if self.lock_state else ["-lock=false"]),
            *(["-destroy"] if destroy else []),
            *(["-refresh-only"] if refresh_only else []),
        ]
        made = out if self.scratch is None else self.scratch / out.name
        result = self._run(workdir, [*args, f"-out={made}"], writable=(made.parent,), stream=True)
        stopped = result.timed_out or result.out_of_memory
        changes = None if stopped or result.returncode not in (0, 2) else result.returncode == 2
        if changes is not None and made != out and os.path.lexists(made):
            try:
                project_sandbox.seal_planfile(made, out)
            except project_sandbox.PlanFileError as exc:
                refused = replace(result, returncode=1, stderr=result.stderr + f"\nplangate: {exc}".encode())
                return StepResult("plan", refused)
        digest = file_digest(out) if changes is not None and out.is_file() else None
        return StepResult("plan", result, has_changes=changes, digest=digest)

    def show_json(self, workdir: Path, planfile: Path) -> bytes:
        """The saved plan as JSON; TerraformError if it failed or was too big to keep whole. What the gate
        reads comes through FIFOs of this step's own (in a project sandbox) or pipes of its own: never
        one the plan's code held, and may have handed (a descriptor over a unix socket) to a process in
        another sandbox that writes into it while `show` runs."""
        args = ["show", "-json", str(planfile)]
        result = self._run(workdir, args, max_output=self.max_json, readable=(planfile.parent,))
        require(result, "show -json")
        if result.truncated:
            raise TerraformError(f"show -json output exceeds {self.max_json} bytes", result)
        return result.stdout

    def show_text(self, workdir: Path, planfile: Path) -> str:
        """The saved plan as terraform prints it (for the PR comment)."""
        result = self._run(workdir, ["show", "-no-color", str(planfile)], readable=(planfile.parent,))
        require(result, "show")
        return result.stdout.decode("utf-8", "replace")

    def show_both(self, workdir: Path, planfile: Path) -> tuple[bytes, str]:
        """JSON and text of the saved plan, read concurrently (`show` takes no lock): on a large
        plan the text rendering would otherwise add its whole time to every job."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            as_json = pool.submit(self.show_json, workdir, planfile)
            alone = replace(self, box=None)  # a project sandbox runs one step at a time
            as_text = pool.submit(alone.show_text, workdir, planfile)
            return as_json.result(), as_text.result()

    def apply(self, workdir: Path, planfile: Path, digest: str | None) -> StepResult:
        """Apply exactly the saved plan that was checked: its digest must not have changed since."""
        if digest is None or not planfile.is_file() or file_digest(planfile) != digest:
            refused = RunResult(
                ("apply",), 1, b"", b"the plan file changed after it was checked", False, None, 0.0, False
            )
            return StepResult("apply", refused)
        args = ["apply", "-input=false", "-no-color", str(planfile)]
        result = self._run(workdir, args, readable=(planfile.parent,), stream=True)
        stale = not result.ok and b"Saved plan is stale" in result.stdout + result.stderr
        return StepResult("apply", result, stale_plan=stale)


@contextlib.contextmanager
def _no_identity() -> Iterator[tuple[dict[str, str], Path | None]]:
    yield {}, None


def _cache_in_the_way(result: RunResult, cache: Path) -> bool:
    """Did this init fail on the plugin cache: writing it (terraform and tofu name the path), or an
    entry another init was still writing ("... from the shared cache directory: ...")?"""
    said = result.stdout + result.stderr
    return str(cache).encode() in said or b"shared cache" in said
