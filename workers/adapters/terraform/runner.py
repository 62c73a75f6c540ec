"""Run one terraform/tofu (or git) subprocess safely: own process group, timeout, memory cap, bounded output.

Timeout: SIGINT to the whole group first (terraform stops cleanly and releases its state lock), then
SIGTERM, then SIGKILL, `grace` seconds apart. Whatever is left of the group when its leader exits is
killed too, so no provider plugin or stray child outlives a run.

Memory cap: for the whole run where the worker has a cgroup root (cgroups.py: the run's own cgroup,
joined before anything runs, watched while it runs). Elsewhere per process: RLIMIT_DATA, not
RLIMIT_AS. Go binaries reserve far more address space than they use (terraform 1.11 needs ~800 MB of
RLIMIT_AS just to plan one `terraform_data`, while ~64 MB of RLIMIT_DATA suffices), so RLIMIT_AS
would make the setting mean something else. RLIMIT_DATA counts private writable memory (heap,
anonymous mmaps): what actually grows when a process eats memory. It is per process and inherited,
so terraform and each provider plugin get the cap separately; a container's memory limit remains the
hard ceiling for the whole worker. The limit (soft and hard) is set in the child by util-linux's
`prlimit`, which then execs the command, or where that is missing by a tiny Python exec trampoline
(slower: an interpreter starts for each call); never by `preexec_fn`, which is unsafe when the worker has threads.
"""

from __future__ import annotations

import contextlib
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from workers.adapters.terraform.cgroups import CgroupRoot, StepCgroup

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
_PRLIMIT = shutil.which("prlimit")  # util-linux: sets the cap without starting a Python interpreter

# Sees each chunk a process prints, as it is read: ("stdout" | "stderr", bytes). Called on the thread
# that supervises the process, so it must return quickly (a live output sink queues what it gets).
OnOutput = Callable[[str, bytes], None]


def capped(limit: int, argv: list[str]) -> list[str]:
    """`argv` run under RLIMIT_DATA `limit` (soft and hard, so the child cannot raise it again)."""
    if _PRLIMIT is None:
        return [sys.executable, "-I", "-S", "-c", _TRAMPOLINE, str(limit), *argv]
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]  # the child inherits ours: never ask for more
    n = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
    return [_PRLIMIT, f"--data={n}:{n}", "--", *argv]


# What a process says when an allocation fails under RLIMIT_DATA: Go's runtime, Python, GNU coreutils.
OOM_MARKERS = (b"fatal error: out of memory", b"runtime: out of memory", b"MemoryError", b"memory exhausted")


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
    memory_cap: int | None = None  # bytes: the cap this run had (per run in a cgroup, else per process)
    out_of_memory: bool = False  # the cap stopped it: its cgroup counted an OOM kill, or a process said so

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.out_of_memory

    @property
    def output(self) -> str:
        """stdout then stderr, decoded for display."""
        parts = [p.decode("utf-8", "replace") for p in (self.stdout, self.stderr) if p]
        return "\n".join(p.rstrip("\n") for p in parts)


class Tail:
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


def leader_exited(pid: int) -> bool:
    """Has the group leader exited? Does not reap it, so its pid keeps naming the group."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


@contextlib.contextmanager
def exit_notice(pid: int) -> Iterator[int | None]:
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


def kill_group(pgid: int, sig: signal.Signals) -> None:
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


def signal_group(pgid: int, sig: signal.Signals, *, spare_leader: bool) -> None:
    """Signal the group; with `spare_leader`, all of it but its leader (bwrap, which would die of
    SIGINT and take the sandbox down with SIGKILL before terraform could release its state lock)."""
    if not spare_leader or sig == signal.SIGKILL:
        kill_group(pgid, sig)
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
    cgroups: CgroupRoot | None = None,
    on_output: OnOutput | None = None,
) -> RunResult:
    """Run `argv` with exactly `env`, in its own session; never raises for the child's failure.

    `memory_limit_bytes` caps the whole run in a cgroup of its own under `cgroups`, each process
    without one. `spare_leader`: the timeout's SIGINT and SIGTERM go to the leader's descendants only
    (the leader is a sandbox that exits when they do); SIGKILL still takes the whole group.
    `on_output` sees every chunk as it is read (the bounded tails are kept all the same)."""
    exe = resolve_executable(argv[0], env)
    full = [exe, *argv[1:]]
    watch = Watch(timeout, grace, max_output, spare_leader, on_output)
    if memory_limit_bytes is None:
        done = _supervise(full, None, cwd, env, watch)
        return replace(done, argv=tuple(argv))
    if cgroups is None:
        done = _supervise(capped(memory_limit_bytes, full), None, cwd, env, watch)
        said = done.returncode != 0 and any(m in done.stderr for m in OOM_MARKERS)
        return replace(done, argv=tuple(argv), memory_cap=memory_limit_bytes, out_of_memory=said)
    with cgroups.step(memory_limit_bytes) as cage:
        done = _supervise(cage.joining(full), cage, cwd, env, watch)
        return replace(done, argv=tuple(argv), memory_cap=memory_limit_bytes, out_of_memory=cage.oom_kills() > 0)


@dataclass(frozen=True)
class Watch:
    """How a run is watched: its timeout and the grace between signals, the output kept, who else reads it."""

    timeout: float
    grace: float
    max_output: int
    spare_leader: bool
    on_output: OnOutput | None


def started(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`argv` leading a session (and process group) of its own, stdin /dev/null, stdout and stderr piped."""
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _supervise(full: list[str], cage: StepCgroup | None, cwd: Path, env: dict[str, str], watch: Watch) -> RunResult:
    """Start `full` and see it to its end: output read as it comes, the timeout's escalation, and
    (with `cage`) the whole group killed as soon as its cgroup counts an OOM kill."""
    start = time.monotonic()
    proc = started(full, cwd, env)
    assert proc.stdout is not None and proc.stderr is not None
    tails = {proc.stdout.fileno(): Tail(watch.max_output), proc.stderr.fileno(): Tail(watch.max_output)}
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    streams = {out_fd: "stdout", err_fd: "stderr"}
    escalation = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
    next_signal_at = start + watch.timeout
    next_oom_look = start
    killed_by: signal.Signals | None = None
    exited_at: float | None = None
    with selectors.DefaultSelector() as sel, exit_notice(proc.pid) as exit_fd:
        for fd in tails:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
        if exit_fd is not None:
            sel.register(exit_fd, selectors.EVENT_READ)
        try:
            while True:
                now = time.monotonic()
                if exited_at is None and leader_exited(proc.pid):
                    exited_at = now
                    kill_group(proc.pid, signal.SIGKILL)  # whatever is left of the group
                    if cage is not None:
                        cage.kill()  # and of the cgroup (a process that left the group)
                    if exit_fd is not None:
                        sel.unregister(exit_fd)
                reading = [fd for fd in tails if fd in sel.get_map()]
                if exited_at is not None and (not reading or now - exited_at > _DRAIN_AFTER_EXIT):
                    break
                if exited_at is None and cage is not None and now >= next_oom_look:
                    next_oom_look = now + _POLL
                    if cage.oom_kills():  # the cap was reached: the step ends whole (v2 does it itself)
                        kill_group(proc.pid, signal.SIGKILL)
                        cage.kill()
                if exited_at is None and now >= next_signal_at and escalation:
                    killed_by = escalation.pop(0)
                    signal_group(proc.pid, killed_by, spare_leader=watch.spare_leader)
                    next_signal_at = now + watch.grace
                if not sel.get_map():  # pipes closed and no exit notice here: look again soon
                    time.sleep(_EXIT_POLL)
                    continue
                for key, _ in sel.select(_POLL):
                    if key.fd == exit_fd:
                        continue  # the leader exited: seen at the top of the loop
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        tails[key.fd].add(chunk)
                        if watch.on_output is not None:
                            watch.on_output(streams[key.fd], chunk)
                    else:
                        sel.unregister(key.fd)
        finally:
            if exited_at is None:  # an exception in this process: leave nothing running
                kill_group(proc.pid, signal.SIGKILL)
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()
    return RunResult(
        argv=tuple(full),
        returncode=proc.returncode,
        stdout=bytes(tails[out_fd].buf),
        stderr=bytes(tails[err_fd].buf),
        timed_out=killed_by is not None,
        killed_by=killed_by.name if killed_by is not None else None,
        duration=time.monotonic() - start,
        truncated=tails[out_fd].truncated or tails[err_fd].truncated,
    )
