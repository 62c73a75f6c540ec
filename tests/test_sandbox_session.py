"""A project's init, plan and show in one sandbox (sandbox_session.py), with real bubblewrap: one start, and
still nothing a step leaves behind runs during the next, and no step can reach the supervisor."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from core.projects import Project
from tests.tfproject import main_tf
from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.pipeline import JobDirs, plan
from workers.adapters.terraform.sandbox import Sandbox
from workers.adapters.terraform.steps import Terraform

pytestmark = pytest.mark.slow

TOOL = shutil.which("tofu") or shutil.which("terraform")
SHOW_JSON = json.dumps({"format_version": "1.2", "resource_changes": []})


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _fake(tmp: Path, sandbox: Sandbox, body: str, **kwargs: object) -> tuple[Terraform, JobDirs]:
    """A runner whose `terraform` is a shell script (`$1` the step), on a job whose checkout it may write."""
    script = _script(tmp / "bin" / "terraform", body)
    dirs = JobDirs(tmp / "job")
    (dirs.src / "infra").mkdir(parents=True)
    dirs.planfile.parent.mkdir(parents=True)
    env = {"PATH": f"{script.parent}:/usr/bin:/bin", "MARKS": str(dirs.src / "infra")}
    tf = Terraform("terraform", env, timeout=60, memory_limit_bytes=None, sandbox=sandbox, writable=(dirs.src,))
    return replace(tf, **kwargs), dirs  # type: ignore[arg-type]


def _steps(tf: Terraform, dirs: JobDirs) -> tuple[bool, bool, bytes]:
    with project_steps(tf, dirs) as (boxed, root):
        assert boxed.box is not None, "this host runs a project's steps in one sandbox"
        init = boxed.init(root)
        planned = boxed.plan(root, dirs.planfile)
        shown = boxed.show_json(root, dirs.planfile) if planned.ok else b""
    return init.ok, planned.ok, shown


@contextlib.contextmanager
def project_steps(tf: Terraform, dirs: JobDirs) -> Iterator[tuple[Terraform, Path]]:
    """`tf` with the steps of the job's `infra` project in one sandbox, and that project's directory."""
    root = dirs.src / "infra"
    with tf.one_sandbox(root, dirs.scratch, dirs.planfile.parent, dirs.root) as boxed:
        yield boxed, root


def _counting(tmp: Path, sandbox: Sandbox) -> tuple[Sandbox, Path]:
    """`sandbox` with a bwrap that notes each start before it becomes the real one."""
    starts = tmp / "bwrap-starts"
    log = f'for a; do last=$a; done; echo "start $last" >> {starts}'
    wrapper = _script(tmp / "counting" / "bwrap", f'{log}\nexec {sandbox.bwrap} "$@"')
    return replace(sandbox, bwrap=str(wrapper)), starts


def test_this_host_has_an_execute_only_supervisor(sandbox: Sandbox) -> None:
    assert sandbox.supervisor is not None
    assert stat.S_IMODE(os.stat(sandbox.supervisor).st_mode) == 0o111


@pytest.mark.parametrize(("supervised", "sandboxes"), [(True, 1), (False, 3)], ids=["one-sandbox", "per-step"])
def test_a_projects_init_plan_and_show_start_one_sandbox(
    sandbox: Sandbox, tmp_path: Path, supervised: bool, sandboxes: int
) -> None:
    """Without a supervisor, a sandbox per step: the plan file is written into the scratch directory and
    sealed by copy all the same (the plan directory is never writable)."""
    assert TOOL is not None, "this test needs terraform or tofu on PATH"
    counted, starts = _counting(tmp_path, sandbox if supervised else replace(sandbox, supervisor=None))
    dirs = JobDirs(tmp_path / "job")
    (dirs.src / "infra").mkdir(parents=True)
    dirs.planfile.parent.mkdir(parents=True)
    (dirs.src / "infra" / "main.tf").write_text(main_tf(tmp_path / "state" / "t.tfstate", {"a": "x"}))
    cache = tmp_path / "cache"
    cache.mkdir()
    env = build_env(passthrough=[], source_env=os.environ, home=sandbox.home(tmp_path / "home"), plugin_cache=cache)
    tf = Terraform(
        TOOL, env, timeout=120, sandbox=counted, writable=(dirs.src,), plugin_cache=cache, lock_state=False,
        init_lock=tmp_path / "init.lock",
    )  # fmt: skip
    planned = plan(tf, Project("infra", "infra"), dirs)
    assert planned.plan is not None, planned.error
    assert [c.address for c in planned.plan.changes] == ["terraform_data.a"]
    assert planned.digest is not None and dirs.planfile.is_file()
    assert not os.path.lexists(dirs.scratch / dirs.planfile.name)  # copied out, then removed
    assert len(starts.read_text().splitlines()) == sandboxes  # supervised: init, plan and show -json in one


def test_a_background_process_the_plans_code_started_cannot_run_during_show(sandbox: Sandbox, tmp_path: Path) -> None:
    body = f"""case "$1" in
init) exit 0 ;;
plan)
  ( while :; do echo tick >> "$MARKS/alive"; [ -e "$MARKS/show-began" ] && echo ran >> "$MARKS/during-show"
    sleep 0.02; done ) &
  ( trap '' INT TERM HUP; setsid sh -c 'while :; do [ -e "$MARKS/show-began" ] && echo ran >> "$MARKS/during-show"
    sleep 0.02; done' & ) &
  sleep 0.3
  for a in "$@"; do case "$a" in -out=*) echo plan > "${{a#-out=}}" ;; esac; done
  exit 2 ;;
show) touch "$MARKS/show-began"; sleep 0.5; echo '{SHOW_JSON}' ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    marks = dirs.src / "infra"
    assert _steps(tf, dirs) == (True, True, SHOW_JSON.encode() + b"\n")
    assert (marks / "alive").read_text().count("tick") >= 3  # it ran while the plan did
    assert (marks / "show-began").exists()
    assert not (marks / "during-show").exists()  # and not once while show ran


def test_no_step_can_reach_the_supervisor_and_the_next_step_still_runs(sandbox: Sandbox, tmp_path: Path) -> None:
    body = f"""case "$1" in
init)
  cat /proc/1/environ >/dev/null 2>&1 && echo read-environ
  for fd in /proc/1/fd/*; do
    readlink "$fd" >/dev/null 2>&1 && echo read-fd; echo "9 0" 2>/dev/null > "$fd" && echo wrote-fd
  done
  for sig in KILL STOP TERM INT USR1; do kill -s $sig 1 2>/dev/null; done
  echo "$$ $(ls /proc | grep -c '^[0-9]')"
  exit 0 ;;
plan) for a in "$@"; do case "$a" in -out=*) echo plan > "${{a#-out=}}" ;; esac; done; exit 0 ;;
show) echo '{SHOW_JSON}' ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        init = boxed.init(root)
        planned = boxed.plan(root, dirs.planfile)
        shown = boxed.show_json(root, dirs.planfile)
    said = init.result.stdout.decode()
    assert init.ok and not any(word in said for word in ("read-environ", "read-fd", "wrote-fd")), said
    assert planned.ok and planned.has_changes is False and shown == SHOW_JSON.encode() + b"\n"


@pytest.mark.parametrize("trick", ['ln "$out" "${out%/*}/alias"', 'ln -s /etc/hostname "$out"'])
def test_a_plan_file_with_another_name_or_not_a_file_is_refused(sandbox: Sandbox, tmp_path: Path, trick: str) -> None:
    """Another name in the scratch directory would stay writable to `show` after the digest was taken."""
    body = f"""case "$1" in
plan) for a in "$@"; do case "$a" in -out=*) out="${{a#-out=}}" ;; esac; done
  [ -L /etc/hostname ] || true
  case '{trick}' in ln\\ -s*) ;; *) echo plan > "$out" ;; esac
  {trick}
  exit 2 ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body)
    with project_steps(tf, dirs) as (boxed, root):
        planned = boxed.plan(root, dirs.planfile)
    assert not planned.ok and planned.digest is None and "refused" in planned.output
    assert not dirs.planfile.exists() and not os.path.lexists(dirs.planfile)


def test_a_timeout_stops_the_step_and_the_sandbox_runs_the_next(sandbox: Sandbox, tmp_path: Path) -> None:
    body = f"""case "$1" in
plan) trap 'echo got-int; exit 3' INT; while :; do sleep 0.1; done ;;
show) echo '{SHOW_JSON}' ;;
*) exit 0 ;;
esac"""
    tf, dirs = _fake(tmp_path, sandbox, body, timeout=1.0, grace=5.0)
    with project_steps(tf, dirs) as (boxed, root):
        planned = boxed.plan(root, dirs.planfile)
        again = replace(boxed, timeout=60.0).init(root)
    assert planned.result.timed_out and planned.result.killed_by == "SIGINT" and b"got-int" in planned.result.stdout
    assert planned.result.returncode == 3 and again.ok
