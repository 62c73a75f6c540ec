"""The shared plugin cache: read-only to every step but an init that holds its turn (init_lock), and
an init that finds what it needs there takes no turn. Real bubblewrap; real terraform for the last test."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.sandbox import Sandbox
from workers.adapters.terraform.steps import Terraform

TOOL = shutil.which("tofu") or shutil.which("terraform")
NO_SANDBOX = Sandbox()


def _fake_tool(tmp: Path, body: str, sandbox: Sandbox = NO_SANDBOX) -> tuple[Terraform, Path]:
    """A runner whose `terraform` is a shell script (`$1` the step), logging each start to $LOG."""
    script = tmp / "bin" / "terraform"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\necho "$1" >> "$LOG"\n{body}\n')
    script.chmod(0o755)
    cache, work, logs = tmp / "cache", tmp / "work", tmp / "logs"
    for made in (cache, work, logs):
        made.mkdir()
    env = {"PATH": f"{script.parent}:/usr/bin:/bin", "LOG": str(logs / "log"), "TF_PLUGIN_CACHE_DIR": str(cache)}
    tf = Terraform(
        "terraform", env, timeout=60, memory_limit_bytes=None, init_lock=tmp / "init.lock", sandbox=sandbox,
        writable=(work, logs), plugin_cache=cache,
    )  # fmt: skip
    return tf, work


def _runs(tmp: Path) -> list[str]:
    log = tmp / "logs" / "log"
    return log.read_text().split() if log.exists() else []


@contextmanager
def _turn_held(lock: Path) -> Iterator[None]:
    """Hold the inits' turn, as another worker's init would."""
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def test_no_step_can_write_the_cache(sandbox: Sandbox, tmp_path: Path) -> None:
    tf, work = _fake_tool(tmp_path, 'touch "$TF_PLUGIN_CACHE_DIR/by-$1" 2>/dev/null; exit 0', sandbox)
    (work / "plan").mkdir()
    assert tf.plan(work, work / "plan" / "p.tfplan").result.returncode == 0
    tf.show_text(work, work / "plan" / "p.tfplan")
    assert tf.init(work).ok  # the script ignores the failed write: nothing said the cache was in the way
    assert _runs(tmp_path) == ["plan", "show", "init"]
    assert list((tmp_path / "cache").iterdir()) == []


def test_an_init_that_finds_what_it_needs_takes_no_turn(sandbox: Sandbox, tmp_path: Path) -> None:
    tf, work = _fake_tool(tmp_path, "exit 0", sandbox)
    with _turn_held(tmp_path / "init.lock"):
        done = threading.Thread(target=tf.init, args=(work,))
        done.start()
        done.join(timeout=30)
        assert not done.is_alive(), "the init waited for a turn it did not need"
    assert _runs(tmp_path) == ["init"]


def test_an_init_that_must_write_the_cache_runs_again_in_its_turn(sandbox: Sandbox, tmp_path: Path) -> None:
    tf, work = _fake_tool(
        tmp_path,
        'touch "$TF_PLUGIN_CACHE_DIR/provider" 2>/dev/null && exit 0\n'
        'echo "mkdir $TF_PLUGIN_CACHE_DIR/registry.terraform.io: read-only file system" >&2; exit 1',
        sandbox,
    )
    results = []
    with _turn_held(tmp_path / "init.lock"):
        waiting = threading.Thread(target=lambda: results.append(tf.init(work)))
        waiting.start()
        deadline = time.monotonic() + 30
        while not _runs(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert waiting.is_alive() and _runs(tmp_path) == ["init"], "it should wait for its turn, having tried once"
        assert list((tmp_path / "cache").iterdir()) == []
    waiting.join(timeout=30)
    assert results and results[0].ok, results
    assert _runs(tmp_path) == ["init", "init"]
    assert (tmp_path / "cache" / "provider").exists()


def test_an_init_failing_otherwise_is_not_run_again(sandbox: Sandbox, tmp_path: Path) -> None:
    tf, work = _fake_tool(tmp_path, 'echo "Error: Unsupported block type" >&2; exit 1', sandbox)
    failed = tf.init(work)
    assert not failed.ok and "Unsupported block type" in failed.output
    assert _runs(tmp_path) == ["init"]


def test_without_the_sandbox_every_init_takes_its_turn(tmp_path: Path) -> None:
    """Nothing keeps the cache read-only then, so no init may run beside another."""
    tf, work = _fake_tool(tmp_path, "exit 0")
    with _turn_held(tmp_path / "init.lock"):
        waiting = threading.Thread(target=tf.init, args=(work,))
        waiting.start()
        time.sleep(0.5)
        assert waiting.is_alive() and _runs(tmp_path) == []
    waiting.join(timeout=30)
    assert _runs(tmp_path) == ["init"]


def test_real_inits_take_a_turn_only_to_fill_the_cache(sandbox: Sandbox, tmp_path: Path) -> None:
    """A provider from a filesystem mirror: the first init installs it into the cache (in its turn);
    a project whose lock file pins it then inits from the cache while another init holds the turn."""
    tool = TOOL
    assert tool is not None, "this test needs terraform or tofu on PATH"
    mirror = tmp_path / "mirror" / "registry.terraform.io" / "example" / "fake" / "1.0.0" / "linux_amd64"
    mirror.mkdir(parents=True)
    (mirror / "terraform-provider-fake_v1.0.0").write_text("#!/bin/sh\nexit 1\n")  # init never runs it
    (mirror / "terraform-provider-fake_v1.0.0").chmod(0o755)
    cli = tmp_path / "cli.tfrc"
    cli.write_text(f'provider_installation {{\n  filesystem_mirror {{\n    path = "{tmp_path / "mirror"}"\n  }}\n}}\n')
    cache = tmp_path / "cache"
    cache.mkdir()
    source = {**os.environ, "TF_CLI_CONFIG_FILE": str(cli)}
    env = build_env(
        passthrough=["TF_CLI_CONFIG_FILE"], source_env=source, home=sandbox.home(tmp_path), plugin_cache=cache
    )
    projects = [tmp_path / name for name in ("first", "second")]
    for project in projects:
        project.mkdir()
        (project / "main.tf").write_text(
            'terraform {\n  required_providers {\n    fake = { source = "example/fake", version = "1.0.0" }\n  }\n}\n'
        )
    lock = tmp_path / "init.lock"

    def runner(project: Path) -> Terraform:
        return Terraform(
            tool, env, timeout=120, sandbox=sandbox, init_lock=lock, plugin_cache=cache,
            writable=(project,), readable=(tmp_path / "mirror", cli),
        )  # fmt: skip

    first = runner(projects[0]).init(projects[0])
    assert first.ok, first.output
    assert (cache / "registry.terraform.io" / "example" / "fake" / "1.0.0" / "linux_amd64").is_dir()
    shutil.copyfile(projects[0] / ".terraform.lock.hcl", projects[1] / ".terraform.lock.hcl")
    results = []
    with _turn_held(lock):
        second = threading.Thread(target=lambda: results.append(runner(projects[1]).init(projects[1])))
        second.start()
        second.join(timeout=120)
        assert not second.is_alive(), "a locked provider already in the cache needs no turn"
    assert results[0].ok and "from the shared cache directory" in results[0].output, results[0].output
