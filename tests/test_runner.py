"""The terraform runner and its env: kill on timeout, memory cap, clean env, real terraform steps."""

from __future__ import annotations

import errno
import os
import resource
import shutil
import stat
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.adapters.terraform import runner
from workers.adapters.terraform.env import (
    NEVER_PASSED,
    ToolNotFoundError,
    build_env,
    detect_tool,
    parse_passthrough,
    passed_names,
)
from workers.adapters.terraform.runner import run
from workers.adapters.terraform.steps import Terraform, TerraformError

pytestmark = pytest.mark.slow

FAKES = Path(__file__).parent / "fakes"
MiB = 1024 * 1024


def _env() -> dict[str, str]:
    return {"PATH": os.environ["PATH"]}


def _gone(pid: int) -> bool:
    """True once `pid` no longer runs (absent, or a zombie nobody reaped yet); waits up to 10 s."""
    for _ in range(200):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0]
        except FileNotFoundError:
            return True
        if state in "ZX":
            return True
        time.sleep(0.05)
    return False


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@pytest.fixture(params=["pidfd", "polled"])
def exit_notice(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each exit path runs with the kernel's exit notice (a pidfd) and without one (old kernels, seccomp)."""
    if request.param == "polled":

        def unavailable(pid: int, flags: int = 0) -> int:
            raise OSError(errno.ENOSYS, "pidfd_open")

        monkeypatch.setattr(os, "pidfd_open", unavailable)
    return str(request.param)


def test_timeout_tries_sigint_then_sigterm_then_kills_the_whole_group(tmp_path: Path, exit_notice: str) -> None:
    script = tmp_path / "fake-terraform"
    shutil.copy(FAKES / "hang_ignoring_signals.sh", script)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    result = run([str(script)], cwd=tmp_path, env=_env(), timeout=1.5, memory_limit_bytes=None, grace=0.5)
    assert result.timed_out
    assert result.killed_by == "SIGKILL"
    assert result.returncode == -9
    log = (tmp_path / "signals.log").read_text().splitlines()
    assert log[0] == "started"
    assert log.index("got INT") < log.index("got TERM")
    child = int((tmp_path / "child.pid").read_text())
    assert _gone(child)


def test_a_process_that_honours_sigint_stops_at_the_first_signal(tmp_path: Path, exit_notice: str) -> None:
    result = run(["sleep", "100"], cwd=tmp_path, env=_env(), timeout=0.3, memory_limit_bytes=None, grace=5)
    assert (result.timed_out, result.killed_by, result.returncode) == (True, "SIGINT", -2)
    assert not result.ok


def test_children_left_behind_by_a_finished_process_are_killed(tmp_path: Path, exit_notice: str) -> None:
    result = run(["sh", "-c", "sleep 1000 & echo $!"], cwd=tmp_path, env=_env(), timeout=60, memory_limit_bytes=None)
    assert result.ok and not result.timed_out and result.killed_by is None
    assert _gone(int(result.stdout))


def test_a_process_that_closes_its_output_early_is_still_timed_out(tmp_path: Path, exit_notice: str) -> None:
    argv = ["sh", "-c", "exec >/dev/null 2>&1; sleep 100"]
    result = run(argv, cwd=tmp_path, env=_env(), timeout=0.3, memory_limit_bytes=None, grace=5)
    assert (result.timed_out, result.killed_by) == (True, "SIGINT")


def test_an_exit_is_seen_when_it_happens_not_at_a_later_look(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[float] = []
    real_sleep = time.sleep

    def look_later(seconds: float) -> None:
        looks.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", look_later)
    for _ in range(20):
        result = run(["echo", "hi"], cwd=tmp_path, env=_env(), timeout=10, memory_limit_bytes=None)
        assert result.ok and result.stdout == b"hi\n"
    assert looks == []  # the pidfd woke the loop: no step waits out a poll after its process ended


def test_memory_cap_stops_the_child_and_not_the_worker(tmp_path: Path) -> None:
    grab = "chunks = [bytearray(16 * 1024 * 1024) for _ in range(32)]; print('allocated')"
    before = resource.getrlimit(resource.RLIMIT_DATA)
    capped = run(_python(grab), cwd=tmp_path, env=_env(), timeout=60, memory_limit_bytes=128 * MiB)
    assert capped.returncode != 0
    assert b"MemoryError" in capped.stderr
    assert capped.out_of_memory and not capped.timed_out
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    uncapped = run(_python(grab), cwd=tmp_path, env=_env(), timeout=60, memory_limit_bytes=1024 * MiB)
    assert uncapped.ok and uncapped.stdout == b"allocated\n"
    assert not uncapped.out_of_memory


@pytest.mark.parametrize("with_prlimit", [True, False], ids=["prlimit", "python-trampoline"])
def test_the_cap_is_soft_and_hard_so_the_child_cannot_lift_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_prlimit: bool
) -> None:
    if not with_prlimit:
        monkeypatch.setattr(runner, "_PRLIMIT", None)
    else:
        assert runner._PRLIMIT is not None, "util-linux's prlimit is expected on this machine"
    code = (
        "import resource\n"
        "print(*resource.getrlimit(resource.RLIMIT_DATA))\n"
        "resource.setrlimit(resource.RLIMIT_DATA, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))\n"
    )
    result = run(_python(code), cwd=tmp_path, env=_env(), timeout=60, memory_limit_bytes=256 * MiB)
    assert result.stdout.split() == [str(256 * MiB).encode()] * 2
    assert result.returncode != 0 and b"ValueError" in result.stderr  # raising it is refused


def test_terraform_under_a_tiny_cap_reports_out_of_memory(tmp_path: Path) -> None:
    tool = detect_tool(None)
    result = run([tool, "version"], cwd=tmp_path, env=_env(), timeout=60, memory_limit_bytes=16 * MiB)
    assert result.returncode != 0 and result.out_of_memory


def test_huge_output_does_not_deadlock_and_keeps_the_tail(tmp_path: Path, exit_notice: str) -> None:
    code = (
        "import sys\n"
        "for i in range(200):\n"
        "    sys.stdout.write('o' * 100_000); sys.stderr.write('e' * 100_000)\n"
        "sys.stdout.write('OUT-END'); sys.stderr.write('ERR-END')\n"
    )
    result = run(_python(code), cwd=tmp_path, env=_env(), timeout=120, memory_limit_bytes=None, max_output=MiB)
    assert result.ok and result.truncated
    assert len(result.stdout) == MiB and result.stdout.endswith(b"oOUT-END")
    assert len(result.stderr) == MiB and result.stderr.endswith(b"eERR-END")


def test_missing_executable_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-terraform"):
        run(["no-such-terraform"], cwd=tmp_path, env=_env(), timeout=5, memory_limit_bytes=None)


def test_terraform_sees_none_of_the_bots_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {
        "GITHUB_APP_PRIVATE_KEY": "-----BEGIN RSA PRIVATE KEY-----x",
        "GITHUB_APP_PRIVATE_KEY_PATH": "/secret/key.pem",
        "GITHUB_WEBHOOK_SECRET": "hook-secret",
        "GITHUB_TOKEN": "ghs_parent_token",
        "REDIS_URL": "redis://:pw@127.0.0.1:6379/0",
        "PLANGATE_TF_ENV": "AWS_*,GITHUB_*",
        "DEPLOY_TOKEN": "unrelated-token",
    }
    for name, value in {**secrets, "AWS_REGION": "eu-west-1", "AWS_SESSION_TOKEN": "aws-tok"}.items():
        monkeypatch.setenv(name, value)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(FAKES / "terraform_envdump.sh", bin_dir / "terraform")
    (bin_dir / "terraform").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    env = build_env(
        passthrough=parse_passthrough(os.environ["PLANGATE_TF_ENV"]),
        source_env=os.environ,
        home=tmp_path / "home",
        plugin_cache=tmp_path / "cache",
    )
    step = Terraform("terraform", env, timeout=30).init(tmp_path)
    assert step.ok and "fake terraform init" in step.output
    dumped = dict(item.split("=", 1) for item in (tmp_path / "env.dump").read_text().split("\0") if "=" in item)
    assert dumped["AWS_REGION"] == "eu-west-1"
    assert dumped["AWS_SESSION_TOKEN"] == "aws-tok"
    assert dumped["TF_IN_AUTOMATION"] == "1" and dumped["TF_INPUT"] == "0"
    assert dumped["CHECKPOINT_DISABLE"] == "1"
    assert dumped["HOME"] == str(tmp_path / "home")
    assert dumped["TF_PLUGIN_CACHE_DIR"] == str(tmp_path / "cache")
    for name, value in secrets.items():
        assert name not in dumped
        assert all(value not in v for v in dumped.values())


def test_exact_names_pass_but_the_bots_own_settings_never_do() -> None:
    source = {
        "GITHUB_TOKEN": "t",
        "GITHUB_WEBHOOK_SECRET": "s",
        "PLANGATE_TF_ENV": "x",
        "TF_VAR_region": "r",
        "PATH": "/evil",
    }
    names = ["GITHUB_TOKEN", "GITHUB_WEBHOOK_SECRET", "PLANGATE_TF_ENV", "TF_VAR_*", "PATH", "*"]
    env = build_env(passthrough=names, source_env=source, home=Path("/h"), plugin_cache=Path("/c"))
    assert env["GITHUB_TOKEN"] == "t" and env["TF_VAR_region"] == "r"
    assert "GITHUB_WEBHOOK_SECRET" not in env and "PLANGATE_TF_ENV" not in env
    assert env["PATH"] == "/evil"  # PATH comes from the source env, never from the passthrough list
    assert parse_passthrough(" AWS_*, ,TF_VAR_x ,") == ["AWS_*", "TF_VAR_x"]


_names = st.sampled_from(
    [*NEVER_PASSED, "PLANGATE_X", "GITHUB_TOKEN", "REDIS_HOST", "AWS_REGION", "TF_VAR_a", "HOME", "PATH"]
)


@given(st.lists(_names, unique=True), st.lists(st.sampled_from(["*", "G*", "*_*", "AWS_*", "?*", "REDIS*"])))
def test_globs_never_reach_the_bots_namespaces(names: list[str], globs: list[str]) -> None:
    passed = passed_names(globs, names)
    assert not any(n.startswith(("GITHUB_", "PLANGATE_", "REDIS_")) for n in passed)
    assert not set(passed) & {"HOME", "PATH"}


def test_detect_tool_prefers_tofu_and_names_a_missing_one(tmp_path: Path) -> None:
    for tool in ("tofu", "terraform"):
        (tmp_path / tool).write_text("#!/bin/sh\n")
        (tmp_path / tool).chmod(0o755)
    assert detect_tool(None, path=str(tmp_path)) == "tofu"
    (tmp_path / "tofu").unlink()
    assert detect_tool(None, path=str(tmp_path)) == "terraform"
    with pytest.raises(ToolNotFoundError, match="tofu"):
        detect_tool("tofu", path=str(tmp_path))
    with pytest.raises(ToolNotFoundError, match="pulumi"):
        detect_tool("pulumi", path=str(tmp_path))
    with pytest.raises(ToolNotFoundError, match="neither"):
        detect_tool(None, path=str(tmp_path / "empty"))


def _project(tmp_path: Path, value: str) -> Path:
    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    state = tmp_path / "state" / "terraform.tfstate"
    (config / "main.tf").write_text(
        f'terraform {{\n  backend "local" {{\n    path = "{state}"\n  }}\n}}\n'
        f'resource "terraform_data" "a" {{\n  input = "{value}"\n}}\n'
        'resource "terraform_data" "b" {\n  triggers_replace = [terraform_data.a.output]\n}\n'
    )
    return config


def test_real_terraform_init_plan_show_apply_under_the_default_cap(tmp_path: Path) -> None:
    tool = detect_tool(None)
    env = build_env(passthrough=[], source_env=os.environ, home=tmp_path, plugin_cache=tmp_path / "plugins")
    (tmp_path / "plugins").mkdir()
    tf = Terraform(tool, env, timeout=300)
    assert tf.memory_limit_bytes == 4096 * MiB
    config = _project(tmp_path, "one")
    assert tf.init(config).ok
    first = tf.plan(config, tmp_path / "first.plan")
    assert first.ok and first.has_changes is True
    assert b'"resource_changes"' in tf.show_json(config, tmp_path / "first.plan")
    assert "2 to add, 0 to change, 0 to destroy" in tf.show_text(config, tmp_path / "first.plan")
    applied = tf.apply(config, tmp_path / "first.plan", first.digest)
    assert applied.ok and not applied.stale_plan
    assert "Apply complete! Resources: 2 added" in applied.output
    again = tf.plan(config, tmp_path / "again.plan")
    assert again.ok and again.has_changes is False

    _project(tmp_path, "two")
    older = tf.plan(config, tmp_path / "older.plan")
    newer = tf.plan(config, tmp_path / "newer.plan")
    assert older.has_changes and newer.has_changes
    assert "to destroy" in tf.show_text(config, tmp_path / "newer.plan")
    assert tf.apply(config, tmp_path / "newer.plan", newer.digest).ok
    stale = tf.apply(config, tmp_path / "older.plan", older.digest)
    assert not stale.ok and stale.stale_plan


def test_plan_errors_and_failed_show_are_reported(tmp_path: Path) -> None:
    tool = detect_tool(None)
    env = build_env(passthrough=[], source_env=os.environ, home=tmp_path, plugin_cache=tmp_path)
    tf = Terraform(tool, env, timeout=120)
    config = tmp_path / "broken"
    config.mkdir()
    (config / "main.tf").write_text('resource "terraform_data" "a" {\n  input = var.missing\n}\n')
    assert tf.init(config).ok
    plan = tf.plan(config, tmp_path / "p.plan")
    assert not plan.ok and plan.has_changes is None
    assert "var.missing" in plan.output or "Reference to undeclared" in plan.output
    with pytest.raises(TerraformError, match="show -json failed") as err:
        tf.show_json(config, tmp_path / "p.plan")
    assert err.value.result.returncode != 0


def test_init_lock_serializes_inits(tmp_path: Path) -> None:
    """Two inits sharing a plugin cache never overlap: the second waits for the first's lock."""
    import threading

    script = tmp_path / "bin" / "terraform"
    script.parent.mkdir()
    script.write_text('#!/bin/sh\necho start >> "$LOG"\nsleep 0.3\necho end >> "$LOG"\n')
    script.chmod(0o755)
    log = tmp_path / "log"
    env = {"PATH": f"{script.parent}:/usr/bin:/bin", "LOG": str(log)}
    tf = Terraform(tool="terraform", env=env, memory_limit_bytes=None, init_lock=tmp_path / "init.lock")
    threads = [threading.Thread(target=tf.init, args=(tmp_path,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    events = log.read_text().split()
    assert events == ["start", "end", "start", "end"]
