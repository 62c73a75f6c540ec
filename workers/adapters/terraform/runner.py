"""Run one terraform/tofu (or git) subprocess safely: own process group, timeout, memory cap, bounded output.

Timeout: SIGINT to the whole group first (terraform stops cleanly and releases its state lock), then
SIGTERM, then SIGKILL, `grace` seconds apart. Whatever is left of the group when its leader exits is
killed too, so no provider plugin or stray child outlives a run.

Memory cap: RLIMIT_DATA, not RLIMIT_AS. Go binaries reserve far more address space than they use
(terraform 1.11 needs ~800 MB of RLIMIT_AS just to plan one `terraform_data`, while ~64 MB of
RLIMIT_DATA suffices), so RLIMIT_AS would make the setting mean something else. RLIMIT_DATA counts
private writable memory (heap, anonymous mmaps): what actually grows when a process eats memory. It is
per process and inherited, so terraform and each provider plugin get the cap separately; a container's
memory limit remains the hard ceiling for the whole worker. The limit (soft and hard) is set in the
child by util-linux's `prlimit`, which then execs the command, or where that is missing by a tiny
Python exec trampoline (~15 ms slower a call); never by `preexec_fn`, which is unsafe when the worker
has threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from workers.adapters.terraform.sandbox import Sandbox, SandboxError

DEFAULT_MAX_OUTPUT = 8 * 1024 * 1024
_DRAIN_AFTER_EXIT = 5.0  # seconds to read pipes still held by an escaped grandchild
_POLL = 0.1
_EXIT_POLL = 0.005
_TRAMPOLINE = (
    "import os,resource,sys\n"
    "n=int(sys.argv[1])\n"
    "_,h=resource.getrlimit(resource.RLIMIT_DATA)\n"
    "n=n if h==resource.RLIM_INFINITY else min(n,h)\n"
    "resource.setrlimit(resource.RLIMIT_DATA,(n,n))\n"
    "os.execv(sys.argv[2],sys.argv[2:])\n"
)
_PRLIMIT = shutil.which("prlimit")  # util-linux: sets the cap in ~5 ms where the Python trampoline takes ~20


def _capped(limit: int, argv: list[str]) -> list[str]:
    """`argv` run under RLIMIT_DATA `limit` (soft and hard, so the child cannot raise it again)."""
    if _PRLIMIT is None:
        return [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, str(limit), *argv]
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]  # the child inherits ours: never ask for more
    n = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    return [_PRLIMIT, f"--data={n}:{n}", "--", *argv]


_OOM_MARKERS = (b"fatal error: out of memory", b"runtime: out of memory", b"MemoryError")


@dataclass(frozen=True)
class RunResult:
    """What one subprocess did. `stdout`/`stderr` keep the last `max_output` bytes each."""

    argv: tuple[str, ...]
    returncode: int  # negative: ended by that signal
    stdout: bytes
    stderr: bytes
    timed_out: bool
    killed_by: str | None  # the last signal plangate sent because of the timeout, e.g. "SIGKILL"
    duration: float
    truncated: bool  # some output was dropped (the head; the tail is kept)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def out_of_memory(self) -> bool:
        """The process reported an allocation failure (likely the memory cap)."""
        return self.returncode != 0 and any(m in self.stderr for m in _OOM_MARKERS)

    @property
    def output(self) -> str:
        """stdout then stderr, decoded for display."""
        parts = [p.decode("utf-8", "replace") for p in (self.stdout, self.stderr) if p]
        return "\n".join(p.rstrip("\n") for p in parts)


class _Tail:
    """A byte buffer that keeps only its last `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.truncated = False

    def add(self, chunk: bytes) -> None:
        self.buf += chunk
        excess = len(self.buf) - self.limit
        if excess > 0:
            del self.buf[:excess]
            self.truncated = True


def resolve_executable(name: str, env: Mapping[str, str]) -> str:
    """Absolute path of `name` on the child's PATH; FileNotFoundError naming it otherwise."""
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(f"{name} not found on PATH")
    return os.path.abspath(found)


def _leader_exited(pid: int) -> bool:
    """Has the group leader exited? Does not reap it, so its pid keeps naming the group."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


@contextlib.contextmanager
def _exit_notice(pid: int) -> Iterator[int | None]:
    """A pidfd that turns readable when `pid` exits (Linux 5.3+), so its exit is seen at once rather
    than at the next poll; None where the kernel has none."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _killpg(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _group_members(pgid: int) -> list[int]:
    """Pids in process group `pgid`, read from /proc (sandboxed processes included: same group)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _signal(pgid: int, sig: signal.Signals, *, spare_leader: bool) -> None:
    """Signal the group; with `spare_leader`, all of it but its leader (bwrap, which would die of
    SIGINT and take the sandbox down with SIGKILL before terraform could release its state lock)."""
    if not spare_leader or sig == signal.SIGKILL:
        _killpg(pgid, sig)
        return
    for pid in _group_members(pgid):
        if pid != pgid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)


def run(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    memory_limit_bytes: int | None,
    grace: float = 10.0,
    max_output: int = DEFAULT_MAX_OUTPUT,
    spare_leader: bool = False,
) -> RunResult:
    """Run `argv` with exactly `env`, in its own session; never raises for the child's failure.

    `spare_leader`: the timeout's SIGINT and SIGTERM go to the leader's descendants only (the leader
    is a sandbox that exits when they do); SIGKILL still takes the whole group."""
    exe = resolve_executable(argv[0], env)
    full = [exe, *argv[1:]]
    if memory_limit_bytes is not None:
        full = _capped(memory_limit_bytes, full)
    start = time.monotonic()
    proc = subprocess.Popen(
        full,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    tails = {proc.stdout.fileno(): _Tail(max_output), proc.stderr.fileno(): _Tail(max_output)}
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    escalation = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
    next_signal_at = start + timeout
    killed_by: signal.Signals | None = None
    exited_at: float | None = None
    with selectors.DefaultSelector() as sel, _exit_notice(proc.pid) as exit_fd:
        for fd in tails:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        if exit_fd is not None:
            sel.register(exit_fd, selectors.EVENT_READ)
        try:
            while True:
                now = time.monotonic()
                if exited_at is None and _leader_exited(proc.pid):
                    exited_at = now
                    _killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
                    if exit_fd is not None:
                        sel.unregister(exit_fd)
                reading = [fd for fd in tails if fd in sel.get_map()]
                if exited_at is not None and (not reading or now - exited_at > _DRAIN_AFTER_EXIT):
                    break
                if exited_at is None and now >= next_signal_at and escalation:
                    killed_by = escalation.pop(0)
                    _signal(proc.pid, killed_by, spare_leader=spare_leader)
                    next_signal_at = now + grace
                if not sel.get_map():  # pipes closed and no exit notice here: look again soon
                    time.sleep(_EXIT_POLL)
                    continue
                for key, _ in sel.select(_POLL):
                    if key.fd == exit_fd:
                        continue  # the leader exited: seen at the top of the loop
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        tails[key.fd].add(chunk)
                    else:
                        sel.unregister(key.fd)
        finally:
            if exited_at is None:  # an exception in this process: leave nothing running
                _killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
    return RunResult(
        argv=tuple(argv),
        returncode=proc.returncode,
        stdout=bytes(tails[out_fd].buf),
        stderr=bytes(tails[err_fd].buf),
        timed_out=killed_by is not None,
        killed_by=killed_by.name if killed_by is not None else None,
        duration=time.monotonic() - start,
        truncated=tails[out_fd].truncated or tails[err_fd].truncated,
    )


class TerraformError(RuntimeError):
    """A terraform step whose output the caller needs (show) failed; `result` says how."""

    def __init__(self, message: str, result: RunResult) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class StepResult:
    """One terraform step: the run, plus what plangate reads from it."""

    step: str  # "init" | "plan" | "apply"
    result: RunResult
    has_changes: bool | None = None  # plan only: exit code 2 of -detailed-exitcode
    stale_plan: bool = False  # apply only: "Saved plan is stale" (state moved since the plan)
    digest: str | None = None  # plan only: SHA-256 of the saved plan file

    @property
    def ok(self) -> bool:
        if self.step == "plan":
            return not self.result.timed_out and self.result.returncode in (0, 2)
        return self.result.ok

    @property
    def output(self) -> str:
        return self.result.output


@dataclass(frozen=True)
class Terraform:
    """The terraform/tofu steps plangate runs, each under the same env, timeout, memory cap and sandbox.

    `writable` are the paths every step may write inside the sandbox (the job's checkout); the plan
    file's directory is writable for `plan` only, read-only for `show` and `apply`. The plugin cache
    is read-only to every step but an init that holds `init_lock`: a plan's code cannot swap a
    provider binary under another job's feet, and an init that finds what it needs in the cache
    (a locked, warm cache, or no provider to install) takes no turn.
    """

    tool: str  # "tofu" | "terraform" (or a path to either)
    env: dict[str, str]
    timeout: float = 1800.0
    memory_limit_bytes: int | None = 4096 * 1024 * 1024
    grace: float = 10.0
    max_output: int = DEFAULT_MAX_OUTPUT
    max_json: int = 512 * 1024 * 1024  # show -json must be read whole, or not at all
    init_lock: Path | None = None  # held by an init that writes the plugin cache (unsafe for concurrent inits)
    plugin_cache: Path | None = None
    sandbox: Sandbox = field(default_factory=Sandbox)
    writable: tuple[Path, ...] = ()
    readable: tuple[Path, ...] = ()  # shown read-only to every step (a shared tree of the commit)
    mounts: tuple[tuple[Path, Path], ...] = ()  # (source, target): writable over what `readable` shows

    def _run(
        self,
        workdir: Path,
        args: list[str],
        max_output: int | None = None,
        *,
        writable: tuple[Path, ...] = (),
        readable: tuple[Path, ...] = (),
    ) -> RunResult:
        exe = resolve_executable(self.tool, self.env)
        cache = () if self.plugin_cache is None or self.plugin_cache in writable else (self.plugin_cache,)
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
            env=self.env,
            timeout=self.timeout,
            memory_limit_bytes=self.memory_limit_bytes,
            grace=self.grace,
            max_output=max_output or self.max_output,
            spare_leader=self.sandbox.enabled,
        )
        if self.sandbox.enabled and result.returncode != 0 and result.stderr.startswith(b"bwrap: "):
            why = result.stderr.decode("utf-8", "replace").strip().splitlines()[0]
            raise SandboxError(f"setting PLANGATE_SANDBOX: the sandbox could not start ({why})")
        return replace(result, argv=tuple([self.tool, *args]))

    def init(self, workdir: Path) -> StepResult:
        """init with the plugin cache read-only first (sandboxed, nothing else can make it so); only an
        init that had to install into it runs again, its turn taken, with the cache writable."""
        args = ["init", "-input=false", "-no-color"]
        cache = () if self.plugin_cache is None else (self.plugin_cache,)
        if self.init_lock is None:
            return StepResult("init", self._run(workdir, args, writable=cache))
        if self.sandbox.enabled and self.plugin_cache is not None:
            first = self._run(workdir, args)
            if first.ok or first.timed_out or not _cache_in_the_way(first, self.plugin_cache):
                return StepResult("init", first)
        with self.init_lock.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, even if the job dies
            return StepResult("init", self._run(workdir, args, writable=cache))

    def plan(self, workdir: Path, out: Path, *, destroy: bool = False) -> StepResult:
        """`plan -detailed-exitcode`: 0 no changes, 2 changes, anything else (1) an error.
        `destroy`: plan the destruction of everything the configuration manages (a deleted project)."""
        args = [
            "plan",
            "-input=false",
            "-no-color",
            "-detailed-exitcode",
            *(["-destroy"] if destroy else []),
            f"-out={out}",
        ]
        result = self._run(workdir, args, writable=(out.parent,))
        changes = None if result.timed_out or result.returncode not in (0, 2) else result.returncode == 2
        digest = file_digest(out) if changes is not None and out.is_file() else None
        return StepResult("plan", result, has_changes=changes, digest=digest)

    def show_json(self, workdir: Path, planfile: Path) -> bytes:
        """The saved plan as JSON; TerraformError if it failed or was too big to keep whole."""
        args = ["show", "-json", str(planfile)]
        result = self._run(workdir, args, max_output=self.max_json, readable=(planfile.parent,))
        _require(result, "show -json")
        if result.truncated:
            raise TerraformError(f"show -json output exceeds {self.max_json} bytes", result)
        return result.stdout

    def show_text(self, workdir: Path, planfile: Path) -> str:
        """The saved plan as terraform prints it (for the PR comment)."""
        result = self._run(workdir, ["show", "-no-color", str(planfile)], readable=(planfile.parent,))
        _require(result, "show")
        return result.stdout.decode("utf-8", "replace")

    def show_both(self, workdir: Path, planfile: Path) -> tuple[bytes, str]:
        """JSON and text of the saved plan, read concurrently (`show` takes no lock): on a large
        plan the text rendering would otherwise add its whole time to every job."""
        with ThreadPoolExecutor(max_workers=2) as pool:
            as_json = pool.submit(self.show_json, workdir, planfile)
            as_text = pool.submit(self.show_text, workdir, planfile)
            return as_json.result(), as_text.result()

    def apply(self, workdir: Path, planfile: Path, digest: str | None) -> StepResult:
        """Apply exactly the saved plan that was checked: its digest must not have changed since."""
        if digest is None or not planfile.is_file() or file_digest(planfile) != digest:
            refused = RunResult(
                ("apply",), 1, b"", b"the plan file changed after it was checked", False, None, 0.0, False
            )
            return StepResult("apply", refused)
        args = ["apply", "-input=false", "-no-color", str(planfile)]
        result = self._run(workdir, args, readable=(planfile.parent,))
        stale = not result.ok and b"Saved plan is stale" in result.stdout + result.stderr
        return StepResult("apply", result, stale_plan=stale)


def _cache_in_the_way(result: RunResult, cache: Path) -> bool:
    """Did this init fail on the plugin cache: writing it (terraform and tofu name the path), or an
    entry another init was still writing ("... from the shared cache directory: ...")?"""
    said = result.stdout + result.stderr
    return str(cache).encode() in said or b"shared cache" in said


def file_digest(path: Path) -> str:
    """SHA-256 of a file: the saved plan applied must be the one whose JSON was checked."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _require(result: RunResult, what: str) -> None:
    if result.timed_out:
        raise TerraformError(f"terraform {what} timed out after {result.duration:.0f}s", result)
    if result.returncode != 0:
        tail = result.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise TerraformError(f"terraform {what} failed (exit {result.returncode}): {tail}", result)
