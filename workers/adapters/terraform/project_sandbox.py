"""Starting a project sandbox (sandbox_session.py): its supervisor, what it shows, and sealing the plan file
its plan step wrote."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from workers.adapters.checkout import remove_tree
from workers.adapters.terraform.cgroups import JOIN_FAILED, CgroupRoot, StepCgroup
from workers.adapters.terraform.runner import capped, started
from workers.adapters.terraform.sandbox import Sandbox, SandboxError
from workers.adapters.terraform.sandbox_session import Session

SUPERVISOR = (
    "trap : INT TERM HUP\n"
    'exec 3<"$1/cmd" 4>"$1/done"\n'
    "echo ready >&4\n"
    "while read -r step <&3; do\n"
    '  /bin/sh "$1/$step" </dev/null >"$1/$step.out" 2>"$1/$step.err" 3<&- 4>&-\n'
    "  rc=$?\n"
    "  while kill -9 -1 2>/dev/null; do /bin/true; done\n"  # each /bin/true lets the shell reap orphans
    '  echo "$step $rc" >&4\n'
    "done\n"
)
START_TIMEOUT = 30.0
_COPY_CHUNK = 1024 * 1024


class PlanFileError(RuntimeError):
    """The plan step left something other than a regular file with a single name where its plan goes."""


@dataclass(frozen=True)
class Shown:
    """What every step of a session may see: the paths it writes, the paths it reads, mounted copies."""

    writable: tuple[Path, ...]
    readable: tuple[Path, ...]
    mounts: tuple[tuple[Path, Path], ...]


@contextlib.contextmanager
def opened(
    sandbox: Sandbox,
    *,
    workdir: Path,
    under: Path,
    scratch: Path,
    env: dict[str, str],
    shown: Shown,
    memory_limit_bytes: int | None,
    cgroups: CgroupRoot | None,
) -> Iterator[Session]:
    """A project sandbox, its supervisor ready; killed whole when the block ends. `under`: where its
    control directory goes (outside everything the sandbox shows writable)."""
    assert sandbox.supervisor is not None
    ctl = Path(tempfile.mkdtemp(prefix="steps-", dir=under))
    scratch.mkdir(parents=True, exist_ok=True)
    for fifo in ("cmd", "done"):
        os.mkfifo(ctl / fifo, 0o600)
    # Names in it only ever opened, never listed (its mode): a step's script and output FIFOs are named
    # at random, so a process outside that holds a descriptor of it cannot find the next step's.
    ctl.chmod(0o311)
    argv = sandbox.wrap(
        [sandbox.supervisor, "-c", SUPERVISOR, "plangate-supervisor", str(ctl)],
        cwd=workdir,
        writable=[*shown.writable, scratch],
        readable=[*shown.readable, ctl],
        mounts=shown.mounts,
        as_pid_1=True,
    )
    cage_block = cgroups.step(memory_limit_bytes) if cgroups is not None and memory_limit_bytes else None
    try:
        with cage_block if cage_block is not None else contextlib.nullcontext() as cage:
            if cage is not None:
                argv = cage.joining(argv)
            elif memory_limit_bytes is not None:
                argv = capped(memory_limit_bytes, argv)
            session = _start(argv, ctl, env, shown, scratch, cage, memory_limit_bytes, workdir)
            try:
                yield session
            finally:
                session.close()
    finally:
        remove_tree(ctl)


def _start(
    argv: list[str],
    ctl: Path,
    env: dict[str, str],
    shown: Shown,
    scratch: Path,
    cage: StepCgroup | None,
    memory_limit: int | None,
    workdir: Path,
) -> Session:
    """Start the sandbox and wait for its supervisor to hold both FIFOs, then unlink them."""
    cmd = os.open(ctl / "cmd", os.O_RDWR | os.O_CLOEXEC)  # read-write: opening never blocks either side
    done = os.open(ctl / "done", os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    proc = started(argv, workdir, env)
    assert proc.stdout is not None and proc.stderr is not None
    for pipe in (proc.stdout, proc.stderr):
        os.set_blocking(pipe.fileno(), False)
    session = Session(
        proc,
        ctl,
        cmd,
        done,
        env,
        frozenset([*shown.writable, scratch, *(target for _, target in shown.mounts)]),
        frozenset(shown.readable),
        cage,
        memory_limit,
    )
    why = session.ready(START_TIMEOUT)
    if why is not None:
        session.close()
        if why.startswith(JOIN_FAILED):
            raise SandboxError(f"setting PLANGATE_TF_CGROUP: the step's memory cap could not be set ({why.decode()})")
        raise SandboxError(f"setting PLANGATE_SANDBOX: the sandbox could not start ({why.decode()})")
    for fifo in ("cmd", "done"):
        (ctl / fifo).unlink()
    return session


def seal_planfile(made: Path, sealed: Path) -> None:
    """Copy the plan file a sandboxed plan wrote (every process of that step gone) into a new file where
    no step can write it, and remove it. A copy, never a rename: a descriptor of the written file can
    outlive the step (handed over a unix socket to a process in another sandbox, whose abstract socket
    names are the host's), and what is digested, shown and applied must be a file no such descriptor
    reaches. Only a regular file with a single name is taken, and no more of it than it held when looked
    at (a writer holding it cannot make the copy endless)."""
    try:
        fd = os.open(made, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise PlanFileError(f"the plan step left {made.name} as something other than a regular file: refused") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        raise PlanFileError(f"the plan step left {made.name} as something other than a regular file: refused")
    copy, name = tempfile.mkstemp(prefix=".sealing-", dir=sealed.parent)
    with os.fdopen(fd, "rb") as src, os.fdopen(copy, "wb") as dst:
        left = info.st_size
        while left > 0 and (chunk := src.read(min(left, _COPY_CHUNK))):
            dst.write(chunk)
            left -= len(chunk)
    os.replace(name, sealed)  # a new file, whole, even over an earlier plan's
    with contextlib.suppress(OSError):  # whatever has that name now: the copy no longer depends on it
        made.unlink()
