"""One sandbox for a project's init, plan and show: one bubblewrap start where there were three, and
still nothing a step leaves behind runs during the next one, or writes into its output.

Starting a sandbox is most of what the sandbox costs (namespaces and mounts made and torn down: ~8 ms
on an idle 2-core machine, ~20 ms with both cores busy, per step). A session starts one and runs the
steps in it one at a time. Its PID 1 (`bwrap --as-pid-1`) is project_sandbox.py's SUPERVISOR, a few
lines of `sh`:

* it runs a step when the worker names one on its `cmd` FIFO: a script the worker wrote into a
  directory the sandbox sees read-only, with stdin /dev/null, stdout and stderr into two FIFOs made for
  that step alone, none of the supervisor's descriptors, and a HOME and TMPDIR of its own, as a sandbox
  of its own would give it (so no `.terraformrc` an earlier step left in HOME chooses the providers a
  later one runs). The step's name is random and the directory cannot be listed: the plan's code can
  hand a descriptor (over an abstract unix socket, which the shared network namespace shares with every
  other sandbox) of its own output or of that directory to a process outside, but that process cannot
  find the next step's FIFOs, and the worker closes a step's FIFOs when it is over;
* when the step's process exits, it SIGKILLs every other process of the namespace (`kill -9 -1`: all
  but itself) and reaps them until none is left, and only then says `done`. So nothing a step started
  runs during the next, and a step's output is all in its FIFOs by the time it is read;
* no step can reach it: it runs an execute-only copy of the shell (sandbox.py `SUPERVISOR_SHELL`), so
  the kernel marks it non-dumpable and no step may ptrace it, open its /proc fds or read its environ; as
  its namespace's init it gets no signal from inside but those it catches (INT, TERM and HUP, which it
  ignores: the worker's timeout signals reach the step and not it); and its two FIFOs are unlinked as
  soon as it has opened them.

What differs between steps is settled by the worker: `plan` writes its file into `scratch`, writable to
every step of the session, and once the plan step is over (every process of it gone) the worker copies
the file into a new one in the plan directory, read-only to the sandbox, refusing anything but a regular
file with no other name (`project_sandbox.seal_planfile`), before it is digested, shown or applied: a
copy, because a descriptor of the written file may live on outside the sandbox.
"""

from __future__ import annotations

import os
import secrets
import select
import shlex
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from workers.adapters.terraform.cgroups import StepCgroup
from workers.adapters.terraform.runner import (
    OOM_MARKERS,
    RunResult,
    Tail,
    Watch,
    exit_notice,
    kill_group,
    signal_group,
)
from workers.adapters.terraform.sandbox import SandboxError

_DRAIN_AFTER_EXIT = 5.0
SANDBOX_ENDED = 125  # a step's exit code when its sandbox ended under it (never a plan's 0 or 2)
_POLL = 0.1


@dataclass
class Session:
    """A running project sandbox: what it shows, and the pipes its steps print to."""

    proc: subprocess.Popen[bytes]
    ctl: Path
    cmd: int
    done: int
    env: dict[str, str]
    writable: frozenset[Path]
    readable: frozenset[Path]
    cage: StepCgroup | None
    memory_limit: int | None
    ended: bool = False
    _said: bytearray = field(default_factory=bytearray)

    def ready(self, timeout: float) -> bytes | None:
        """None once the supervisor holds both FIFOs; else (the sandbox ended, or `timeout` passed) the
        first line of what it said instead, for the error."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self._said:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                kill_group(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                assert self.proc.stderr is not None
                said = _read(self.proc.stderr.fileno()).strip() or b"it did not start"
                return said.decode("utf-8", "replace").splitlines()[0].encode()
            ready, _, _ = select.select([self.done], [], [], _POLL)
            if ready:
                self._said += _read(self.done)
        if bytes(self._said) != b"ready\n":
            return b"its supervisor did not start"
        self._said.clear()
        return None

    def covers(self, writable: Sequence[Path], readable: Sequence[Path], env: dict[str, str]) -> bool:
        """Can a step with these paths and this env run here? (Else it needs a sandbox of its own.)"""
        shown = self.writable | self.readable
        return env == self.env and set(writable) <= self.writable and set(readable) <= shown

    def run(self, argv: Sequence[str], cwd: Path, watch: Watch) -> RunResult:
        """Run one step to its end, and every process it left behind with it."""
        if self.ended or self.proc.poll() is not None:
            raise SandboxError("setting PLANGATE_SANDBOX: the project's sandbox ended before this step")
        if self._printed_since():
            self.ended = True
            raise SandboxError(
                "setting PLANGATE_SANDBOX: the project's sandbox printed outside its steps' output: refused"
            )
        name = secrets.token_hex(16)  # of its script and output FIFOs: no one outside can guess it
        own = shlex.quote(f"/tmp/step-{secrets.token_hex(8)}")  # a name no step before this one could know
        made = [self.ctl / f"{name}.out", self.ctl / f"{name}.err"]
        pipes: list[int] = []
        try:
            for fifo in made:
                os.mkfifo(fifo, 0o600)
                pipes.append(os.open(fifo, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC))  # opening never blocks
            made.append(self.ctl / name)
            made[-1].write_text(
                f"cd {shlex.quote(str(cwd))} || exit 126\nunset OLDPWD\n"
                f"/bin/mkdir -m 700 {own} {own}/home || exit 126\n"
                f"HOME={own}/home TMPDIR={own} exec {shlex.join(argv)}\n"
            )
            ooms = self.cage.oom_kills() if self.cage is not None else 0
            start = time.monotonic()
            os.write(self.cmd, f"{name}\n".encode())
            tails, code, killed_by = self._watch(name, (pipes[0], pipes[1]), start, watch, ooms)
        finally:
            for fd in pipes:
                os.close(fd)  # a descriptor of them still held outside now writes to no one
            for path in made:
                path.unlink(missing_ok=True)
        result = RunResult(
            argv=tuple(argv),
            returncode=code,
            stdout=bytes(tails[0].buf),
            stderr=bytes(tails[1].buf),
            timed_out=killed_by is not None,
            killed_by=killed_by.name if killed_by is not None else None,
            duration=time.monotonic() - start,
            truncated=tails[0].truncated or tails[1].truncated,
        )
        if self.memory_limit is None:
            return result
        if self.cage is not None:
            out_of_memory = self.cage.oom_kills() > ooms
        else:
            out_of_memory = code != 0 and any(m in result.stderr for m in OOM_MARKERS)
        return replace(result, memory_cap=self.memory_limit, out_of_memory=out_of_memory)

    def _printed_since(self) -> bool:
        """Did anything reach the sandbox's own output? No step ever holds it (each prints into FIFOs of
        its own), so whatever is there is bwrap's or the supervisor's complaint, or came through a
        descriptor nothing should have: the sandbox is not to be trusted with another step."""
        assert self.proc.stdout is not None and self.proc.stderr is not None
        ready, _, _ = select.select([self.proc.stdout.fileno(), self.proc.stderr.fileno()], [], [], 0)
        return bool(ready)

    def _watch(
        self, name: str, pipes: tuple[int, int], start: float, watch: Watch, ooms: int
    ) -> tuple[tuple[Tail, Tail], int, signal.Signals | None]:
        """Read the step's output until the supervisor says it is over (or the sandbox ends, as it does
        at once when its cgroup counts an OOM kill before that: the step ends whole, as a step of its own
        would; `run` reports the OOM either way)."""
        out, err = pipes
        tails = {out: Tail(watch.max_output), err: Tail(watch.max_output)}
        streams = {out: "stdout", err: "stderr"}
        escalation = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]
        next_signal_at = start + watch.timeout
        killed_by: signal.Signals | None = None
        with exit_notice(self.proc.pid) as exit_fd:
            watched = [out, err, self.done, *([exit_fd] if exit_fd is not None else [])]
            while True:
                code = self._said_done(name)
                if code is not None:
                    self._drain(tails, streams, watch)
                    return (tails[out], tails[err]), code, killed_by
                if self.proc.poll() is not None:  # every process of it is gone with its PID 1
                    self.ended = True
                    self._drain(tails, streams, watch)
                    # bwrap's own exit code is not the step's (a plan's 0 or 2 would read as a plan)
                    ended = self.proc.returncode if self.proc.returncode < 0 else SANDBOX_ENDED
                    return (tails[out], tails[err]), ended, killed_by
                now = time.monotonic()
                if self.cage is not None and self.cage.oom_kills() > ooms:
                    kill_group(self.proc.pid, signal.SIGKILL)
                    self.cage.kill()
                if now >= next_signal_at and escalation:
                    killed_by = escalation.pop(0)
                    signal_group(self.proc.pid, killed_by, spare_leader=True)
                    next_signal_at = now + watch.grace
                ready, _, _ = select.select(watched, [], [], _POLL)
                for fd in ready:
                    if fd == self.done:
                        self._said += _read(fd)
                    elif fd in tails:
                        _take(fd, tails, streams, watch)

    def _said_done(self, name: str) -> int | None:
        """The step's exit code once the supervisor has said it is over (128+N: killed by signal N)."""
        line, newline, rest = bytes(self._said).partition(b"\n")
        if not newline:
            return None
        self._said[:] = rest
        said, _, code = line.decode("ascii", "replace").partition(" ")
        if said != name or not code.isdigit():
            raise SandboxError(f"setting PLANGATE_SANDBOX: the project's sandbox answered {line!r} for step {name}")
        value = int(code)
        return -(value - 128) if value > 128 else value

    def _drain(self, tails: dict[int, Tail], streams: dict[int, str], watch: Watch) -> None:
        """Read what the step's processes wrote before they were gone: all of it is in its FIFOs."""
        deadline = time.monotonic() + _DRAIN_AFTER_EXIT
        while time.monotonic() < deadline:
            ready, _, _ = select.select(list(tails), [], [], 0)
            if not ready:
                return
            for fd in ready:
                _take(fd, tails, streams, watch)

    def close(self) -> None:
        kill_group(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.cage is not None:
            self.cage.kill()
        for fd in (self.cmd, self.done):
            os.close(fd)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.proc.stdout.close()
        self.proc.stderr.close()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return b""


def _take(fd: int, tails: dict[int, Tail], streams: dict[int, str], watch: Watch) -> bool:
    """Read a chunk of a step's output into its tail; False at the pipe's end."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    if not chunk:
        return False
    tails[fd].add(chunk)
    if watch.on_output is not None:
        watch.on_output(streams[fd], chunk)
    return True
