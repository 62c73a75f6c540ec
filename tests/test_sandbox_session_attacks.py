"""A project sandbox (sandbox_session.py) under attack, with real bubblewrap: the plan's code (a fake
`terraform` shell script here) tries to change the plan after its digest, to carry something into
`show`, or to outlast a step; each attempt must fail, or fail closed."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.test_sandbox_session import SHOW_JSON, _fake, _script, project_steps
from workers.adapters.terraform.cgroups import STEP_PREFIX, CgroupRoot
from workers.adapters.terraform.sandbox import Sandbox, SandboxError
from workers.adapters.terraform.steps import file_digest

pytestmark = pytest.mark.slow

_OUT = 'for a in "$@"; do case "$a" in -out=*) out="${a#-out=}" ;; esac; done'

# Holds one descriptor sent over an abstract unix socket (the network namespace, and so the abstract
# socket names, are the host's), then writes through it once the test says so.
_RECEIVER = """
import array, errno, os, socket, sys, time
name, go, wrote = sys.argv[1:]
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind("\\0" + name)
server.listen(1)
print("listening", flush=True)
conn, _ = server.accept()
fds = array.array("i")
_, ancillary, _, _ = conn.recvmsg(1, socket.CMSG_LEN(fds.itemsize))
fds.frombytes(ancillary[0][2][: fds.itemsize])
while not os.path.exists(go):
    time.sleep(0.02)
try:
    try:
        os.pwrite(fds[0], b"evil\\n", 0)
    except OSError as exc:  # a pipe or a FIFO
        if exc.errno != errno.ESPIPE:
            raise
        os.write(fds[0], b"evil\\n")
    said = "written"
except OSError as exc:
    said = type(exc).__name__
with open(wrote, "w") as out:
    out.write(said)
"""
_SENDER = """
import os, socket, sys
fd = 1 if sys.argv[2] == "stdout" else os.open(sys.argv[2], os.O_RDWR)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\\0" + sys.argv[1])
s.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd.to_bytes(4, "little"))])
"""


def _receiver(
    sandbox: Sandbox, tmp_path: Path, go: Path | None = None
) -> tuple[str, Path, Path, subprocess.Popen[bytes]]:
    """A process in a sandbox of its own (another job's), waiting for a descriptor on an abstract unix
    socket; it writes `evil` through it once the `go` file exists, then says in `wrote` how that went
    (`written`, or the error's name)."""
    name = f"plangate-attack-{os.getpid()}-{tmp_path.name}"
    other = tmp_path / "other"
    other.mkdir()
    go, wrote = go or other / "go", other / "wrote"
    argv = sandbox.wrap(
        ["/usr/bin/python3", "-c", _RECEIVER, name, str(go), str(wrote)],
        cwd=other,
        writable=[other],
        readable=[go.parent] if go.parent != other else [],
    )
    return name, go, wrote, subprocess.Popen(argv, stdout=subprocess.PIPE, env={"PATH": "/usr/bin:/bin"})


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + 10
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists(), f"{path.name} did not appear"


@pytest.mark.parametrize("per_step", [False, True], ids=["one-sandbox", "sandbox-per-step"])
def test_a_plan_file_descriptor_held_outside_the_sandbox_cannot_change_the_sealed_plan(
    sandbox: Sandbox, tmp_path: Path, per_step: bool
) -> None:
    """The plan's code hands a descriptor of its plan file to a process that no kill of this sandbox
    reaches (another job's sandbox: the attacker's other pull request); that process writes through it
    after the digest. What `show` reads and `apply` checks must still be the file that was digested,
    with a sandbox per project or per step (no supervisor) alike."""
    sandbox = replace(sandbox, supervisor=None) if per_step else sandbox
    name, go, wrote, receiver = _receiver(sandbox, tmp_path)
    try:
        assert receiver.stdout is not None and receiver.stdout.readline() == b"listening\n"
        sender = _script(tmp_path / "job" / "src" / "tools" / "send.py", _SENDER)  # in the checkout
        body = f"""case "$1" in
plan) {_OUT}; echo plan > "$out"; /usr/bin/python3 {sender} {name} "$out" || exit 1; exit 2 ;;
show) cat "$3" >> "$MARKS/shown"; echo '{SHOW_JSON}' ;;
*) exit 0 ;;
esac"""
        tf, dirs = _fake(tmp_path, sandbox, body)
        root = dirs.src / "infra"
        with tf.one_sandbox(root, dirs.scratch, dirs.planfile.parent, dirs.root) as boxed:
            planned = boxed.plan(root, dirs.planfile)
            assert planned.ok and planned.digest is not None, planned.output
            go.touch()
            _wait_for(wrote)  # the process outside the sandbox wrote through its descriptor
            boxed.show_json(root, dirs.planfile)
        assert dirs.planfile.read_bytes() == b"plan\n"
        assert file_digest(dirs.planfile) == planned.digest
        assert (root / "shown").read_bytes() == b"plan\n"
    finally:
        receiver.kill()
        receiver.wait()


def test_a_directory_where_the_plan_file_goes_is_refused(sandbox: Sandbox, tmp_path: Path) -> None:
    body = f"""case "$1" in
plan) {_OUT}; mkdir -p "$out/inside"; exit 2 ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        planned = boxed.plan(root, dirs.planfile)
    assert not planned.ok and planned.digest is None and "refused" in planned.output
    assert not os.path.lexists(dirs.planfile)


def test_nothing_a_step_leaves_in_home_or_tmpdir_is_there_for_the_next(sandbox: Sandbox, tmp_path: Path) -> None:
    """A step of its own starts with an empty HOME and TMPDIR: a `.terraformrc` the plan's code leaves in
    HOME (say `dev_overrides`: a provider binary of its choosing) must not reach a later step."""
    body = f"""case "$1" in
plan) {_OUT}; echo plan > "$out"
  echo 'provider_installation {{ dev_overrides {{ "hashicorp/null" = "/tmp/evil" }} }}' > "$HOME/.terraformrc"
  mkdir -p "$HOME/.terraform.d/plugins" && echo left > "$TMPDIR/left-by-plan"
  echo "$HOME $TMPDIR" > "$MARKS/plan-saw"; exit 2 ;;
init) ls -A "$HOME" "$TMPDIR" > "$MARKS/next-saw"; echo "$HOME $TMPDIR" >> "$MARKS/next-saw" ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        planned = boxed.plan(root, dirs.planfile)
        after = boxed.init(root)
    assert planned.ok and after.ok
    seen = (root / "next-saw").read_text()
    assert ".terraformrc" not in seen and ".terraform.d" not in seen and "left-by-plan" not in seen, seen


def test_signals_to_the_supervisor_while_it_waits_and_kills_change_nothing(sandbox: Sandbox, tmp_path: Path) -> None:
    """INT, TERM and HUP are the signals the supervisor catches (to ignore them): a flood of them, racing
    its wait for the step and its kill loop, neither ends it nor changes the step's exit code."""
    flood = "( while :; do kill -INT 1; kill -TERM 1; kill -HUP 1; done 2>/dev/null ) &"
    body = f"""case "$1" in
init) {flood} {flood} sleep 0.3; exit 0 ;;
plan) {flood} {flood} {_OUT}; echo plan > "$out"; sleep 0.3; exit 2 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        init = boxed.init(root)
        planned = boxed.plan(root, dirs.planfile)
        again = boxed.init(root)
    assert init.ok and planned.ok and planned.has_changes is True and again.ok


def test_processes_hopping_to_new_pids_as_fast_as_they_can_do_not_reach_the_next_step(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """Each forks its successor and exits: a kill by process list would chase them; `kill -9 -1` in a
    loop until nothing is left does not."""
    hop = _script(
        tmp_path / "job" / "src" / "tools" / "hop",
        '[ -e "$MARKS/next-began" ] && echo ran >> "$MARKS/during-next"\necho >> "$MARKS/hops"\n"$0" &',
    )
    body = f"""case "$1" in
plan) {hop} & {hop} & {hop} & {_OUT}; echo plan > "$out"; sleep 0.3; touch "$MARKS/planned"; exit 2 ;;
init) [ -e "$MARKS/planned" ] && touch "$MARKS/next-began" && sleep 0.5; exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        planned = boxed.plan(root, dirs.planfile)
        after = boxed.init(root)
    assert planned.ok and after.ok and (root / "next-began").exists()
    assert len((root / "hops").read_text()) > 30  # they did hop while the plan ran
    assert not (root / "during-next").exists()


def test_a_step_deaf_to_the_timeout_ends_the_sandbox_and_no_later_step_runs(sandbox: Sandbox, tmp_path: Path) -> None:
    """INT and TERM ignored, in a session of its own: the SIGKILL takes bwrap, and with it the whole
    sandbox; the plan fails, and the session refuses the next step rather than start another."""
    deaf = "trap '' INT TERM HUP"
    body = f"""case "$1" in
plan) {deaf}; {_OUT}; echo plan > "$out"
  setsid sh -c "{deaf}; while :; do echo >> \\"\\$MARKS/alive\\"; sleep 0.05; done" &
  while :; do sleep 0.1; done ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body, timeout=1.0, grace=0.5)
    with project_steps(tf, dirs) as (boxed, root):
        planned = boxed.plan(root, dirs.planfile)
        with pytest.raises(SandboxError, match="ended before this step"):
            replace(boxed, timeout=60.0).init(root)
    assert planned.result.timed_out and planned.result.killed_by == "SIGKILL"
    assert not planned.ok and planned.digest is None and not dirs.planfile.exists()
    ticks = (root / "alive").read_text()
    time.sleep(0.3)
    assert (root / "alive").read_text() == ticks  # nothing of it runs any more


def test_the_scratch_directory_and_the_step_scripts_cannot_be_replaced(sandbox: Sandbox, tmp_path: Path) -> None:
    """`scratch` is a mount point (no rename, no removal); the control directory, whose path PID 1's
    command line gives away, is read-only: no step writes the next step's script or its plan's path."""
    body = f"""case "$1" in
init) ctl=$(tr '\\0' '\\n' < /proc/1/cmdline | tail -n 1); scratch="${{ctl%/steps-*}}/scratch"
  echo "ctl $ctl" > "$MARKS/init-saw"
  for n in 1 2 3 4; do
    echo 'echo pwned > "$MARKS/pwned"' 2>/dev/null > "$ctl/$n" && echo wrote-$n >> "$MARKS/init-saw"
  done
  mv "$scratch" "$scratch.gone" 2>/dev/null && echo moved >> "$MARKS/init-saw"
  rmdir "$scratch" 2>/dev/null && echo removed >> "$MARKS/init-saw"
  exit 0 ;;
plan) {_OUT}; echo plan > "$out"; exit 2 ;;
show) cat "$3"; exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        init = boxed.init(root)
        planned = boxed.plan(root, dirs.planfile)
        shown = boxed.show_json(root, dirs.planfile)
    saw = (root / "init-saw").read_text()
    assert init.ok and saw.startswith(f"ctl {dirs.root}/steps-") and saw.count("\n") == 1, saw
    assert planned.ok and shown == b"plan\n" and not (root / "pwned").exists()


def test_nothing_the_plan_writes_outside_its_mounts_is_there_for_the_next_step(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The sandbox's root (`/etc` around the files bubblewrap shows, the directories it makes to mount
    on, a TF_CLI_CONFIG_FILE path no mount covers) lives as long as the sandbox: the plan's code must
    not leave a file there for a later step to read, as a sandbox of its own would start without it."""
    body = f"""case "$1" in
plan) {_OUT}; echo plan > "$out"
  for f in /etc/terraformrc /etc/ssl/ca-bundle.pem /opt/plangate/bin/python3; do
    mkdir -p "${{f%/*}}" 2>/dev/null; echo planted 2>/dev/null > "$f" && echo "$f" >> "$MARKS/planted"
  done
  exit 2 ;;
init) for f in /etc/terraformrc /etc/ssl/ca-bundle.pem /opt/plangate/bin/python3; do
    [ -e "$f" ] && echo "$f" >> "$MARKS/next-saw"
  done; exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        planned = boxed.plan(root, dirs.planfile)
        after = boxed.init(root)
    assert planned.ok and after.ok
    assert not (root / "next-saw").exists(), (root / "next-saw").read_text()


def test_no_step_can_make_a_namespace_where_kill_minus_one_would_not_reach(sandbox: Sandbox, tmp_path: Path) -> None:
    """A process in a PID namespace of its own is still one `kill -9 -1` reaches; but none can be made:
    no user namespace (bwrap --disable-userns), and so no capability for a PID namespace either."""
    if not sandbox.disable_userns:
        pytest.skip("this bubblewrap cannot refuse nested user namespaces")
    body = """case "$1" in
init) for how in "-U" "-Ur" "-p -f" "-Ur -p -f --mount-proc" "-m"; do
    unshare $how true 2>/dev/null && echo "made $how" >> "$MARKS/made"
  done
  /usr/bin/python3 -c 'import os; os.unshare(os.CLONE_NEWUSER)' 2>/dev/null && echo "made python" >> "$MARKS/made"
  echo tried > "$MARKS/tried"; exit 0 ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        init = boxed.init(root)
    assert init.ok and (root / "tried").exists()
    assert not (root / "made").exists(), (root / "made").read_text()


def test_a_stdout_descriptor_held_outside_the_sandbox_cannot_write_into_shows_output(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The plan's code hands its stdout to a process in another sandbox, which writes into it while
    `show` runs: with a prefix and a suffix timed around what show prints, it could make the JSON the gate
    reads a plan of its own. Each step prints into FIFOs of its own, closed when it is over: the write
    reaches no one, and `show -json` reads only what `show` printed."""
    name = f"plangate-attack-{os.getpid()}-{tmp_path.name}"  # as _receiver names it
    sender = _script(tmp_path / "job" / "src" / "tools" / "send.py", _SENDER)
    body = f"""case "$1" in
plan) {_OUT}; echo plan > "$out"; /usr/bin/python3 {sender} {name} stdout || exit 1; exit 2 ;;
show) touch "$MARKS/show-began"; sleep 0.5; echo '{SHOW_JSON}' ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    root = dirs.src / "infra"
    _, _, wrote, receiver = _receiver(sandbox, tmp_path, go=root / "show-began")
    try:
        assert receiver.stdout is not None and receiver.stdout.readline() == b"listening\n"
        with tf.one_sandbox(root, dirs.scratch, dirs.planfile.parent, dirs.root) as boxed:
            assert boxed.box is not None
            planned = boxed.plan(root, dirs.planfile)
            assert planned.ok, planned.output
            shown = boxed.show_json(root, dirs.planfile)
        _wait_for(wrote)
        assert wrote.read_text() == "BrokenPipeError"  # the plan step's FIFO has no reader any more
        assert shown == SHOW_JSON.encode() + b"\n"
    finally:
        receiver.kill()
        receiver.wait()


def test_output_written_between_steps_through_a_held_descriptor_reaches_no_step(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The untimed half of the attack above: the write between two steps goes nowhere, and the next
    step's output is its own."""
    name, go, wrote, receiver = _receiver(sandbox, tmp_path)
    try:
        assert receiver.stdout is not None and receiver.stdout.readline() == b"listening\n"
        sender = _script(tmp_path / "job" / "src" / "tools" / "send.py", _SENDER)
        body = f"""case "$1" in
plan) {_OUT}; echo plan > "$out"; /usr/bin/python3 {sender} {name} stdout || exit 1; exit 2 ;;
show) echo '{SHOW_JSON}' ;;
*) exit 0 ;;
esac"""
        tf, dirs = _fake(tmp_path, sandbox, body)
        root = dirs.src / "infra"
        with tf.one_sandbox(root, dirs.scratch, dirs.planfile.parent, dirs.root) as boxed:
            planned = boxed.plan(root, dirs.planfile)
            assert planned.ok, planned.output
            go.touch()
            _wait_for(wrote)
            shown = boxed.show_json(root, dirs.planfile)
        assert wrote.read_text() == "BrokenPipeError"
        assert shown == SHOW_JSON.encode() + b"\n"
    finally:
        receiver.kill()
        receiver.wait()


def test_a_step_over_the_memory_cap_is_an_oom_and_leaves_nothing_running(
    cgroups: CgroupRoot, sandbox: Sandbox, tmp_path: Path
) -> None:
    """The cap is the session's cgroup's: a plan that passes it (after writing its file) is an OOM, its
    file is not sealed, and nothing of it runs once the step is over, whether the worker saw the OOM
    first (and ended the sandbox) or the supervisor's `done` (after killing the rest)."""
    body = f"""case "$1" in
plan) {_OUT}; echo plan > "$out"
  ( while :; do echo >> "$MARKS/alive"; sleep 0.05; done ) &
  head -c 200M /dev/zero | tail > /dev/null; exit 2 ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body, memory_limit_bytes=64 * 1024 * 1024, cgroups=cgroups)
    with project_steps(tf, dirs) as (boxed, root):
        assert boxed.box is not None and boxed.box.cage is not None
        planned = boxed.plan(root, dirs.planfile)
        ticks = (root / "alive").read_text()
        time.sleep(0.3)
        assert (root / "alive").read_text() == ticks  # nothing of the plan runs, the session still open
    assert planned.result.out_of_memory and not planned.ok and planned.has_changes is None
    assert planned.digest is None and not dirs.planfile.exists()
    assert sorted(cgroups.path.glob(f"{STEP_PREFIX}{os.getpid()}-*")) == []  # this worker's: none left


def test_no_step_can_list_the_control_directory_to_find_the_next_steps_fifos(sandbox: Sandbox, tmp_path: Path) -> None:
    """Its path is no secret (the supervisor's command line names it), its names are: a step (or a
    process it hands a descriptor to) can open a name there, never list them."""
    body = """case "$1" in
init) ctl=$(tr '\\0' '\\n' < /proc/1/cmdline | tail -n 1)
  echo "ctl=$ctl"; ls -a "$ctl" 2>&1; ls "$ctl/cmd" 2>&1; exit 0 ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        said = boxed.init(root).result.stdout.decode()
    assert f"ctl={dirs.root}/steps-" in said
    assert "Permission denied" in said and ".err" not in said and ".out" not in said
    assert "No such file" in said  # the supervisor's FIFOs are gone once it holds them


def test_a_step_whose_sandbox_ends_under_it_is_a_failure_whatever_bwrap_exits_with(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """bwrap exits with its PID 1's code, and a shell that cannot fork exits 2: a sandbox that ended
    mid-plan must not read as a plan with changes (here a bwrap that ends the sandbox and exits 2)."""
    ending = _script(
        tmp_path / "ending" / "bwrap",
        f'{sandbox.bwrap} "$@" & pid=$!\nsleep 1\nkill -9 $pid\nwait $pid\nexit 2',
    )
    body = f"""case "$1" in
plan) {_OUT}; echo plan > "$out"; sleep 30 ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, replace(sandbox, bwrap=str(ending)), body)
    with project_steps(tf, dirs) as (boxed, root):
        assert boxed.box is not None
        planned = boxed.plan(root, dirs.planfile)
    assert planned.result.returncode not in (0, 2) and not planned.ok and planned.digest is None
