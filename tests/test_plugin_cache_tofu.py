"""With an OpenTofu that locks its plugin cache itself (≥ 1.10.5), an init that must write the cache
takes no turn; with any other answer to `tofu version -json` it does. Real bubblewrap; `tofu` is a shell
script (no OpenTofu binary on this machine) that answers `version -json` as the release would."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
import redis

from plumbing import settings as settings_module
from plumbing.records import Records
from tests.keys import rsa_pem
from tests.test_plugin_cache import _turn_held
from workers.adapters.github.auth import TokenCache
from workers.adapters.terraform.sandbox import Sandbox
from workers.adapters.terraform.steps import StepResult, Terraform
from workers.adapters.terraform.tool_version import cache_is_concurrent
from workers.context import WorkerContext

# An init's run: read-only cache → fail as tofu does on it; writable → leave a mark there, wait up to
# $TOGETHER tenths of a second for a second init's mark, and log whether it saw one (both ran at once).
INIT = """me=$(basename "$PWD")
echo "$1 $me" >> "$LOG"
if ! touch "$TF_PLUGIN_CACHE_DIR/mark-$me" 2>/dev/null; then
  echo "mkdir $TF_PLUGIN_CACHE_DIR/registry.opentofu.org: read-only file system" >&2; exit 1
fi
waited=0
while [ "$(ls "$TF_PLUGIN_CACHE_DIR" | grep -c '^mark-')" -lt 2 ] && [ "$waited" -lt "$TOGETHER" ]; do
  sleep 0.1; waited=$((waited + 1))
done
if [ "$(ls "$TF_PLUGIN_CACHE_DIR" | grep -c '^mark-')" -ge 2 ]; then echo "together $me" >> "$LOG"
else echo "alone $me" >> "$LOG"; fi
"""


def _fake_tofu(tmp: Path, version_answer: str) -> Path:
    """A `tofu` whose `version -json` prints `version_answer` (logging the question to tmp/asked)."""
    script = tmp / "bin" / "tofu"
    script.parent.mkdir()
    asked = tmp / "asked"
    script.write_text(
        f"#!/bin/sh\nif [ \"$1\" = version ]; then echo \"$*\" >> '{asked}'; cat <<'EOF'\n{version_answer}\nEOF\n"
        f"exit 0\nfi\n{INIT}"
    )
    script.chmod(0o755)
    return script.parent


def _answer(version: str) -> str:
    return json.dumps({"terraform_version": version, "platform": "linux_amd64", "provider_selections": {}})


def _asked(tmp: Path) -> list[str]:
    path = tmp / "asked"
    return path.read_text().splitlines() if path.exists() else []


def _runner(tmp: Path, sandbox: Sandbox, together: int) -> tuple[Terraform, list[Path]]:
    """A sandboxed runner of the fake tofu, its answer to `version -json` deciding `cache_is_concurrent`
    as workers/context.py does, and two projects."""
    cache, logs = tmp / "cache", tmp / "logs"
    projects = [tmp / "first", tmp / "second"]
    for made in (cache, logs, *projects):
        made.mkdir()
    env = {
        "PATH": f"{tmp / 'bin'}:/usr/bin:/bin",
        "LOG": str(logs / "log"),
        "TF_PLUGIN_CACHE_DIR": str(cache),
        "TOGETHER": str(together),
    }
    tf = Terraform(
        "tofu", env, timeout=60, memory_limit_bytes=None, init_lock=tmp / "init.lock", sandbox=sandbox,
        writable=(*projects, logs), plugin_cache=cache, cache_is_concurrent=cache_is_concurrent("tofu", env),
    )  # fmt: skip
    return tf, projects


def _log(tmp: Path) -> list[str]:
    path = tmp / "logs" / "log"
    return path.read_text().splitlines() if path.exists() else []


def _both_init(tf: Terraform, projects: list[Path]) -> tuple[list[threading.Thread], list[StepResult]]:
    results: list[StepResult] = []
    threads = [threading.Thread(target=lambda p=p: results.append(tf.init(p))) for p in projects]
    for thread in threads:
        thread.start()
    return threads, results


def test_with_tofu_1_10_5_two_writing_inits_run_at_once_while_another_holds_the_turn(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    _fake_tofu(tmp_path, _answer("1.10.5"))
    tf, projects = _runner(tmp_path, sandbox, together=300)  # a writing init waits ≤ 30 s for the other
    assert tf.cache_is_concurrent
    with _turn_held(tmp_path / "init.lock"):
        threads, results = _both_init(tf, projects)
        for thread in threads:
            thread.join(timeout=60)
        assert not any(t.is_alive() for t in threads), "a writing init waited for a turn tofu does not need"
    assert len(results) == 2 and all(r.ok for r in results), [r.output for r in results]
    log = _log(tmp_path)
    each = ["init first", "init first", "init second", "init second", "together first", "together second"]
    assert sorted(log) == each, log  # both read-only first, then both writing at once
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["mark-first", "mark-second"]


@pytest.mark.parametrize("answer", [_answer("1.10.4"), _answer("1.9.1"), _answer("1.10.5-rc1"), "garbage", ""])
def test_any_other_tofu_waits_for_its_turn_to_write(sandbox: Sandbox, tmp_path: Path, answer: str) -> None:
    _fake_tofu(tmp_path, answer)
    tf, projects = _runner(tmp_path, sandbox, together=0)
    assert not tf.cache_is_concurrent
    with _turn_held(tmp_path / "init.lock"):
        threads, results = _both_init(tf, projects)
        deadline = time.monotonic() + 30
        while len(_log(tmp_path)) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)
        assert all(t.is_alive() for t in threads), "a writing init ran without its turn"
        assert sorted(_log(tmp_path)) == ["init first", "init second"]  # each tried once, read-only
        assert list((tmp_path / "cache").iterdir()) == []
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 2 and all(r.ok for r in results), [r.output for r in results]
    log = _log(tmp_path)
    assert len(log) == 6 and log[2:].count("init first") == 1 and log[2:].count("init second") == 1, log
    assert log[3].startswith("alone "), log  # in turn: the first writer ran before the second began


def test_an_init_that_needs_no_write_keeps_the_cache_read_only_with_tofu_1_10_5(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    """The turn goes, the read-only first run stays: the fake succeeds without writing and so never
    meets a writable cache."""
    bin_dir = _fake_tofu(tmp_path, _answer("1.11.2"))
    (bin_dir / "tofu").write_text((bin_dir / "tofu").read_text().replace("me=$(basename", "exit 0\nme=$(basename"))
    tf, projects = _runner(tmp_path, sandbox, together=0)
    assert tf.cache_is_concurrent and tf.init(projects[0]).ok
    assert _log(tmp_path) == [] and list((tmp_path / "cache").iterdir()) == []
    (bin_dir / "tofu").write_text((bin_dir / "tofu").read_text().replace("exit 0\nme=$(basename", "me=$(basename"))
    (tmp_path / "logs" / "log").write_text("")
    tf.plan(projects[0], projects[0] / "p.tfplan")
    assert _log(tmp_path) == ["plan first"] and list((tmp_path / "cache").iterdir()) == []


def test_terraform_never_counts_as_locking_its_cache(tmp_path: Path) -> None:
    bin_dir = _fake_tofu(tmp_path, _answer("1.10.5"))
    (bin_dir / "tofu").rename(bin_dir / "terraform")
    assert cache_is_concurrent("terraform", {"PATH": str(bin_dir)}) is False
    assert _asked(tmp_path) == []


def test_a_missing_hung_or_failing_tofu_is_not_known_to_lock(tmp_path: Path) -> None:
    assert cache_is_concurrent("tofu", {"PATH": str(tmp_path / "nowhere")}) is False
    failing = tmp_path / "failing"
    failing.mkdir()
    (failing / "tofu").write_text(f"#!/bin/sh\necho '{_answer('1.10.5')}'\nexit 1\n")
    (failing / "tofu").chmod(0o755)
    assert cache_is_concurrent("tofu", {"PATH": str(failing)}) is False


def test_the_version_is_asked_once_per_binary_never_per_step(
    tmp_path: Path, redis_conn: redis.Redis, monkeypatch: pytest.MonkeyPatch, sandbox: Sandbox
) -> None:
    bin_dir = _fake_tofu(tmp_path, _answer("1.10.5"))
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    key = rsa_pem()
    ctx = WorkerContext(
        settings_module.load({"PLANGATE_WORKDIR": str(tmp_path / "work")}), redis_conn,
        TokenCache(redis_conn, app_id=1, private_key=key, api_url="http://x"), Records(redis_conn, key), sandbox,
    )  # fmt: skip
    runners = [ctx.terraform("tofu", phase) for phase in ("plan", "drift", "apply")]
    assert [tf.cache_is_concurrent for tf in runners] == [True, True, True]
    assert ctx.terraform(None, "plan").cache_is_concurrent  # tofu is found first
    project = tmp_path / "project"
    project.mkdir()
    runner = runners[0]
    logs = tmp_path / "logs"
    logs.mkdir()
    tf = Terraform(
        runner.tool, {**runner.env, "LOG": str(logs / "log"), "TOGETHER": "0"}, memory_limit_bytes=None,
        init_lock=runner.init_lock, plugin_cache=runner.plugin_cache, sandbox=sandbox, writable=(project, logs),
        cache_is_concurrent=runner.cache_is_concurrent,
    )  # fmt: skip
    assert tf.init(project).ok
    tf.plan(project, project / "p.tfplan")
    assert _asked(tmp_path) == ["version -json"]
