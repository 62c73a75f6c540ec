"""A memory cgroup per terraform step, so PLANGATE_TF_MEMORY_MB caps the step and not each process.

RLIMIT_DATA (runner.py) caps each process on its own: terraform, every provider plugin and every
program an `external` data source forks get the whole cap each. A cgroup caps their sum. Each step
gets a child cgroup of a directory plangate may manage (cgroups_probe.py finds it at start-up) with
the cap as its limit and no swap; the step's first process joins it before anything else runs (a
`sh` that writes its own pid to `cgroup.procs`, then execs bwrap), so every process the step starts
is born inside. When the cap is reached the kernel's OOM killer stops the step: all of it at once on
cgroup v2 (`memory.oom.group`), and on v1 the runner kills the rest as soon as the cgroup counts an
OOM kill. The count (`oom_kill` in `memory.events` or `memory.oom_control`) is how plangate knows
the cap, not terraform, ended the step. Afterwards whatever is left is killed and the cgroup removed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workers.adapters.terraform.sandbox import SandboxError

STEP_PREFIX = "plangate-step-"  # + the creating process's pid + a random tag
JOIN_FAILED = b"plangate: cannot join the step's memory cgroup"
# Runs first in the step's cgroup: it moves itself in, then becomes the step (bwrap, or terraform).
_JOIN = '{ echo $$ >"$1"; } 2>/dev/null || { echo "' + JOIN_FAILED.decode() + ' $1" >&2; exit 125; }; shift; exec "$@"'
_REMOVE_FOR = 10.0  # seconds to wait for a killed step's processes to be gone before giving up on rmdir
_GONE_POLL = 0.01


class CgroupError(SandboxError):
    """A step's cgroup could not be made: the step must not run uncapped (an error of plangate's)."""


@dataclass(frozen=True)
class CgroupRoot:
    """A directory plangate makes step cgroups in: cgroup v2 with the memory controller enabled for
    its children, or a directory of cgroup v1's memory hierarchy."""

    path: Path
    version: Literal[1, 2]
    shell: str  # an absolute path to `sh`, which joins a step to its cgroup

    @contextlib.contextmanager
    def step(self, limit: int) -> Iterator[StepCgroup]:
        """A fresh cgroup capped at `limit` bytes for one step, killed and removed afterwards."""
        made = StepCgroup(self.path / f"{STEP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}", self.version, self.shell)
        try:
            made.path.mkdir()
            made.limit(limit)
        except OSError as exc:
            made.remove()
            why = f"cannot make a memory cgroup in {self.path} ({exc.strerror or exc})"
            raise CgroupError(f"setting PLANGATE_TF_CGROUP: {why}") from None
        try:
            yield made
        finally:
            made.remove()

    def sweep(self) -> None:
        """Remove step cgroups left by processes that died before they could (a killed work horse)."""
        for left in self.path.glob(f"{STEP_PREFIX}*"):
            pid = left.name.removeprefix(STEP_PREFIX).split("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                StepCgroup(left, self.version, self.shell).remove()


@dataclass(frozen=True)
class StepCgroup:
    """One step's cgroup."""

    path: Path
    version: Literal[1, 2]
    shell: str

    def limit(self, limit: int) -> None:
        """The cap, with no swap beyond it; on v2 an OOM kill takes the whole step."""
        if self.version == 2:
            _write(self.path / "memory.max", str(limit))
            _write(self.path / "memory.swap.max", "0", optional=True)
            _write(self.path / "memory.oom.group", "1")
        else:
            _write(self.path / "memory.limit_in_bytes", str(limit))
            _write(self.path / "memory.memsw.limit_in_bytes", str(limit), optional=True)

    def joining(self, argv: list[str]) -> list[str]:
        """`argv` started inside this cgroup: its first process moves itself in before it execs."""
        return [self.shell, "-c", _JOIN, "plangate-join", str(self.path / "cgroup.procs"), *argv]

    def oom_kills(self) -> int:
        """How many processes the kernel killed here for reaching the cap."""
        events = self.path / ("memory.events" if self.version == 2 else "memory.oom_control")
        try:
            return oom_kill_count(events.read_text())
        except OSError:
            return 0

    def pids(self) -> list[int]:
        try:
            return [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def kill(self) -> None:
        """SIGKILL every process in the cgroup (`cgroup.kill` where the kernel has it, 5.14+)."""
        killer = self.path / "cgroup.kill"
        if self.version == 2 and killer.exists():
            with contextlib.suppress(OSError):
                _write(killer, "1")
                return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        """Kill what is left and remove the cgroup; a cgroup whose processes will not go is left for
        the sweep at the next start-up (rmdir of a populated cgroup fails, it never kills)."""
        deadline = time.monotonic() + _REMOVE_FOR
        while True:
            self.kill()
            try:
                self.path.rmdir()
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:  # EBUSY: a process is still dying
                    return
                time.sleep(_GONE_POLL)


def oom_kill_count(events: str) -> int:
    """The `oom_kill N` line of `memory.events` (v2) or `memory.oom_control` (v1); 0 without one."""
    for line in events.splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


def has_oom_count(events: Path) -> bool:
    """Does this kernel count OOM kills per cgroup (v1 since Linux 4.13)?"""
    try:
        return any(line.startswith("oom_kill ") for line in events.read_text().splitlines())
    except OSError:
        return False


def _write(path: Path, value: str, *, optional: bool = False) -> None:
    if optional and not path.exists():
        return
    with path.open("w") as f:
        f.write(value)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
