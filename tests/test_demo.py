"""`make demo` (`python -m standin.demo --no-serve`) runs the whole story through real processes;
its state file is the proof.
Stopped by a signal while it serves, it leaves none of them running."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_demo_tells_the_story_and_changes_real_state(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # the demo starts its own Redis
    result = subprocess.run(
        [sys.executable, "-m", "standin.demo", "--no-serve", "--workdir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-4000:]
    steps = [
        "PR #1 opened by @alice",
        "Plan: 1 to add, 0 to change, 1 to destroy.",
        "`terraform_data.legacy`",
        "plangate/destroy on",
        "failure: 1 to destroy — comment /approve-destroy",
        "@alice /approve-destroy refused",
        "reactions on @alice's comment: eyes, -1",
        "Approved by @bob: 1 destroy",
        "success: 1 destroy approved by @bob",
        "@bob merges #1",
        "Apply complete! Resources: 1 added, 0 changed, 1 destroyed.",
        "state after:  terraform_data.api, terraform_data.web",
    ]
    positions = [out.find(step) for step in steps]
    assert all(p >= 0 for p in positions), [s for s, p in zip(steps, positions, strict=True) if p < 0]
    assert positions == sorted(positions), "the story's steps are out of order"
    state = json.loads((tmp_path / "state" / "terraform.tfstate").read_text())
    names = {r["name"] for r in state["resources"] if r["mode"] == "managed"}
    assert names == {"web", "api"}  # gained the created one, lost the approved destroy


def _processes() -> dict[int, tuple[int, int, str]]:
    """Every process now: pid → (parent pid, session id, start time), read from /proc/PID/stat."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # it ended while we looked
            continue
        if fields[0] != "Z":  # a zombie has ended; its parent just has not reaped it yet
            found[int(stat.parent.name)] = (int(fields[1]), int(fields[3]), fields[19])
    return found


def _descendants(root: int) -> dict[int, str]:
    """The processes under `root` (children, theirs, ...): pid → start time, to tell a reused pid apart."""
    table = _processes()
    found: dict[int, str] = {}
    parents = {root}
    while parents:
        children = {pid for pid, (ppid, _, _) in table.items() if ppid in parents and pid not in found}
        found |= {pid: table[pid][2] for pid in children}
        parents = children
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_demo_stopped_by_a_signal_stops_everything_it_started(tmp_path: Path, signum: signal.Signals) -> None:
    """Not only Ctrl-C: a service manager's SIGTERM or a closed terminal's SIGHUP stops the demo's web,
    worker (and the processes they forked) and Redis too, and the demo exits."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # the demo starts its own Redis
    argv = [sys.executable, "-m", "standin.demo", "--workdir", str(tmp_path)]
    demo = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    lines: list[str] = []
    serving = threading.Event()

    def read() -> None:
        assert demo.stdout is not None
        for raw in demo.stdout:
            lines.append(raw.decode(errors="replace"))
            if lines[-1].startswith("Status page: "):
                serving.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    started: dict[int, str] = {}
    try:
        assert serving.wait(600), "".join(lines)[-4000:]
        started = _descendants(demo.pid)
        commands = [_cmdline(pid) for pid in started]
        for what in ("redis-server", "plangate web", "plangate worker"):
            assert any(what in command for command in commands), (what, commands)
        demo.send_signal(signum)
        assert demo.wait(120) == 0, "".join(lines)[-4000:]
        reader.join(10)
        assert lines[-1].strip() == "stopping", lines[-5:]
        now = _processes()
        left = [_cmdline(pid) for pid, start in started.items() if pid in now and now[pid][2] == start]
        assert left == []
        assert [_cmdline(pid) for pid, (_, session, _) in now.items() if session == demo.pid] == []
    finally:
        if demo.poll() is None:
            demo.kill()
        for pid, start in started.items():  # never leave them to the next test
            with contextlib.suppress(OSError):
                if _processes().get(pid, (0, 0, ""))[2] == start:
                    os.kill(pid, signal.SIGKILL)
