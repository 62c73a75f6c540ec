"""The sandbox with real bubblewrap and real terraform: what a plan's code can and cannot reach."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

import pytest

from core.projects import Project
from core.sandbox_paths import Grant, SandboxPaths, parse_grants
from tests.tfproject import apply_directly, main_tf, state_addresses
from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.pipeline import JobDirs, UnsafePathError, apply, inside, plan
from workers.adapters.terraform.runner import run
from workers.adapters.terraform.sandbox import Sandbox, SandboxError, describe, prepare
from workers.adapters.terraform.steps import Terraform

pytestmark = pytest.mark.slow

TOOL = shutil.which("tofu") or shutil.which("terraform")


def _terraform(sandbox: Sandbox, tmp: Path, *writable: Path) -> Terraform:
    assert TOOL is not None, "these tests need terraform or tofu on PATH"
    cache = tmp / "cache"
    cache.mkdir(exist_ok=True)
    env = build_env(passthrough=[], source_env=os.environ, home=sandbox.home(tmp / "home"), plugin_cache=cache)
    return Terraform(TOOL, env, timeout=120, sandbox=sandbox, writable=writable, plugin_cache=cache)


def _dirs(tmp: Path, main_tf: str) -> JobDirs:
    dirs = JobDirs(tmp / "job")
    (dirs.src / "infra").mkdir(parents=True)
    dirs.planfile.parent.mkdir(parents=True)
    (dirs.src / "infra" / "main.tf").write_text(main_tf)
    return dirs


def test_grants_parse_and_name_the_bad_item() -> None:
    assert parse_grants(" /srv/state:rw, /etc/aws ,, /x:ro") == (
        Grant(Path("/srv/state"), True),
        Grant(Path("/etc/aws"), False),
        Grant(Path("/x"), False),
    )
    with pytest.raises(ValueError, match="'state:rw' is not an absolute path"):
        parse_grants("state:rw")
    with pytest.raises(ValueError, match="only :rw or :ro"):
        parse_grants("/a:b")


def test_the_probe_finds_a_working_sandbox_here(sandbox: Sandbox) -> None:
    assert sandbox.enabled and sandbox.bwrap and not sandbox.grants
    assert describe(sandbox, SandboxPaths()).startswith("bubblewrap (")
    assert "OFF" in describe(Sandbox("off"), SandboxPaths())


def test_the_description_says_what_each_phase_sees_and_how(sandbox: Sandbox) -> None:
    paths = SandboxPaths(parse_grants("/srv/state:rw,/etc/aws"), parse_grants("/srv/scratch:rw"))
    proc = "private /proc" if sandbox.proc else "no /proc"
    per = "one sandbox per project" if sandbox.supervisor else "one sandbox per step"
    assert describe(sandbox, paths) == (
        f"bubblewrap ({proc}, {per}); plan sees /srv/state (ro), /etc/aws (ro), /srv/scratch (rw); "
        "apply sees /srv/state (rw), /etc/aws (ro)"
    )
    assert describe(sandbox, SandboxPaths()).endswith("; plan sees no granted path; apply sees no granted path")


def test_without_bwrap_the_worker_is_told_which_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxError, match=r"PLANGATE_SANDBOX: bwrap .* not installed"):
        prepare("bwrap", SandboxPaths(), tmp_path)
    assert not prepare("off", SandboxPaths(), tmp_path).enabled


def test_a_read_only_grant_must_exist_and_a_writable_one_is_made(tmp_path: Path) -> None:
    missing = (Grant(tmp_path / "missing"),)
    for paths, setting in (
        (SandboxPaths(common=missing), "PLANGATE_SANDBOX_PATHS"),
        (SandboxPaths(plan=missing), "PLANGATE_SANDBOX_PATHS_PLAN"),
        (SandboxPaths(apply=missing), "PLANGATE_SANDBOX_PATHS_APPLY"),
    ):
        with pytest.raises(SandboxError, match=rf"^setting {setting}: .*missing does not exist"):
            prepare("bwrap", paths, tmp_path / "probe")
    made = SandboxPaths(plan=(Grant(tmp_path / "made"),), apply=(Grant(tmp_path / "made", writable=True),))
    assert not prepare("bwrap", made, tmp_path / "probe").grants  # a step gets its phase's grants
    assert (tmp_path / "made").is_dir()


def test_secret_files_outside_the_sandbox_are_invisible(sandbox: Sandbox, tmp_path: Path) -> None:
    assert not sandbox.visible(tmp_path / "app.pem")
    assert sandbox.visible(Path("/usr/share/app.pem"))
    granted = Sandbox("bwrap", sandbox.bwrap, grants=(Grant(tmp_path / "state"),))
    assert granted.visible(tmp_path / "state" / "key.pem")
    assert Sandbox("off").visible(tmp_path / "app.pem")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "secrets")  # bwrap mounts what a granted link points to
    through_link = Sandbox("bwrap", sandbox.bwrap, grants=(Grant(tmp_path / "link"),))
    assert through_link.visible(tmp_path / "secrets" / "app.pem")


def test_of_etc_ssl_and_pki_only_the_ca_certificates_and_openssls_settings_are_shown(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    assert not sandbox.visible(Path("/etc/ssl/private/host.key"))  # the host's TLS keys
    assert not sandbox.visible(Path("/etc/pki/tls/private/host.key"))  # the same on Red Hat's layout
    assert sandbox.visible(Path("/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem"))
    assert sandbox.visible(Path("/etc/ssl/certs/ca-certificates.crt")) and sandbox.visible(Path("/etc/resolv.conf"))
    sh = shutil.which("sh", path="/usr/bin:/bin")
    assert sh is not None
    argv = sandbox.wrap([sh, "-c", "ls -A /etc/ssl"], cwd=tmp_path, writable=[tmp_path])
    listed = run(argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=30, memory_limit_bytes=None)
    shown = set(listed.stdout.decode().split())
    on_host = set(os.listdir("/etc/ssl")) if os.path.isdir("/etc/ssl") else set()
    assert shown == on_host & {"certs", "cert.pem", "ca-bundle.pem", "openssl.cnf"}


def test_the_plans_code_sees_only_its_own_processes_env_and_files(
    sandbox: Sandbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's attack 2 at the runner: /proc/*/environ (those it may read at all: not its
    supervisor's) and file() on host paths reveal nothing."""
    secret_file = tmp_path / "app.pem"
    secret_file.write_text("-----BEGIN RSA PRIVATE KEY-----\nTOPSECRET\n")
    monkeypatch.setenv("GITHUB_WEBHOOK_SECRET", "webhook-topsecret")
    main_tf = (
        'output "environ" { value = [for f in fileset("/proc", "*/environ") : try(file("/proc/${f}"), "")] }\n'
        'output "cmdlines" { value = [for f in fileset("/proc", "*/cmdline") : file("/proc/${f}")] }\n'
        'output "host" { value = fileexists("' + str(secret_file) + '") }\n'
        'output "root" { value = sort(fileset("/", "*")) }\n'
        'output "checkout" { value = fileexists("${path.module}/main.tf") }\n'
    )
    dirs = _dirs(tmp_path, main_tf)
    tf = _terraform(sandbox, tmp_path, dirs.src)
    planned = plan(tf, Project("infra", "infra"), dirs)
    assert planned.plan is not None, planned.error
    outputs = json.loads(tf.show_json(dirs.src / "infra", dirs.planfile))["planned_values"]["outputs"]
    seen = json.dumps(outputs)
    assert "topsecret" not in seen.lower() and "PLANGATE" not in seen and "REDIS" not in seen
    assert outputs["host"]["value"] is False and outputs["checkout"]["value"] is True
    assert "root" not in outputs["root"]["value"] and "work" not in outputs["root"]["value"]
    if sandbox.proc:  # a fresh /proc shows only the sandbox's own few processes
        assert 1 <= len(outputs["cmdlines"]["value"]) <= 8
        assert all("python" not in c and "bin/pytest" not in c for c in outputs["cmdlines"]["value"])


def test_grants_are_read_only_unless_rw(sandbox: Sandbox, tmp_path: Path) -> None:
    ro, rw = tmp_path / "ro", tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    (ro / "in.txt").write_text("granted")
    granted = Sandbox("bwrap", sandbox.bwrap, sandbox.proc, (Grant(ro), Grant(rw, writable=True)))
    sh = shutil.which("sh", path="/usr/bin:/bin")
    assert sh is not None
    script = f"cat {ro}/in.txt; echo x > {ro}/out.txt; echo y > {rw}/out.txt"
    argv = granted.wrap([sh, "-c", script], cwd=tmp_path, writable=[])
    result = run(argv, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, timeout=30, memory_limit_bytes=None)
    assert b"granted" in result.stdout and b"Read-only file system" in result.stderr
    assert not (ro / "out.txt").exists() and (rw / "out.txt").read_text() == "y\n"


def test_a_plan_phase_plan_needs_no_write_access_to_its_local_state(sandbox: Sandbox, tmp_path: Path) -> None:
    """PLANGATE_SANDBOX_PATHS=STATE:rw shows a plan STATE read-only: the local backend cannot lock the
    state there, so plan-phase plans run with -lock=false; the apply phase may write, and locks."""
    state = tmp_path / "state" / "terraform.tfstate"
    apply_directly(tmp_path / "applied", main_tf(state, {"keep": "a"}))
    before = state.read_bytes()
    paths = SandboxPaths(common=(Grant(state.parent, writable=True),))
    dirs = _dirs(tmp_path, main_tf(state, {"keep": "a", "new": "n"}))
    project = Project("infra", "infra")
    locking = replace(_terraform(sandbox, tmp_path, dirs.src), sandbox=replace(sandbox, grants=paths.grants("plan")))
    refused = plan(locking, project, dirs)
    assert refused.plan is None and "Error acquiring the state lock" in (refused.error or "")

    planned = plan(replace(locking, lock_state=False), project, dirs)
    assert planned.plan is not None, planned.error
    assert [c.address for c in planned.plan.changes if c.actions == ("create",)] == ["terraform_data.new"]
    assert state.read_bytes() == before and sorted(p.name for p in state.parent.iterdir()) == ["terraform.tfstate"]

    applying = replace(locking, sandbox=replace(sandbox, grants=paths.grants("apply")))
    planned = plan(applying, project, dirs)
    assert planned.plan is not None, planned.error
    assert apply(applying, project, dirs, planned).ok
    assert state_addresses(state) == {"terraform_data.keep", "terraform_data.new"}


def test_a_plan_on_a_shared_tree_writes_only_its_own_copy(sandbox: Sandbox, tmp_path: Path) -> None:
    tree = tmp_path / "tree"  # as adapters/trees.py leaves it: the commit, shared read-only
    for name in ("infra", "other"):
        (tree / name).mkdir(parents=True)
    (tree / "infra" / "main.tf").write_text(
        'module "m" {\n  source = "../other"\n}\nresource "terraform_data" "x" {\n  input = module.m.v\n}\n'
    )
    (tree / "other" / "main.tf").write_text('output "v" {\n  value = file("${path.module}/in.txt")\n}\n')
    (tree / "other" / "in.txt").write_text("shared")
    dirs = JobDirs(tmp_path / "job", shared=tree)
    dirs.planfile.parent.mkdir(parents=True)
    planned = plan(_terraform(sandbox, tmp_path), Project("infra", "infra"), dirs)
    assert planned.plan is not None, planned.error  # it used a module and a file beside its own directory
    assert "shared" in planned.text
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*")) == [  # the tree is untouched
        "infra",
        "infra/main.tf",
        "other",
        "other/in.txt",
        "other/main.tf",
    ]
    assert (dirs.own / "project" / ".terraform" / "modules").is_dir()  # init wrote into the job's own copy

    sh = shutil.which("sh", path="/usr/bin:/bin")
    assert sh is not None
    script = "echo mine > here.txt; echo theirs > ../other/in.txt; echo new > ../new.txt"
    argv = sandbox.wrap(
        [sh, "-c", script], cwd=tree / "infra", readable=[tree], mounts=[(dirs.own / "project", tree / "infra")]
    )
    result = run(argv, cwd=tree / "infra", env={"PATH": "/usr/bin:/bin"}, timeout=30, memory_limit_bytes=None)
    assert result.stderr.count(b"Read-only file system") == 2
    assert (dirs.own / "project" / "here.txt").read_text() == "mine\n" and not (tree / "infra" / "here.txt").exists()
    assert (tree / "other" / "in.txt").read_text() == "shared" and not (tree / "new.txt").exists()


def test_a_timeout_reaches_the_process_inside_the_sandbox(sandbox: Sandbox, tmp_path: Path) -> None:
    sh = shutil.which("sh", path="/usr/bin:/bin")
    assert sh is not None
    argv = sandbox.wrap(
        [sh, "-c", "trap 'echo got-int; exit 3' INT; while :; do sleep 0.1; done"], cwd=tmp_path, writable=[tmp_path]
    )
    env = {"PATH": "/usr/bin:/bin"}
    result = run(argv, cwd=tmp_path, env=env, timeout=1, memory_limit_bytes=None, grace=5, spare_leader=True)
    assert result.timed_out and result.killed_by == "SIGINT" and b"got-int" in result.stdout


def test_a_sandbox_that_cannot_start_is_an_error_of_ours(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    dirs = _dirs(tmp_path, 'resource "terraform_data" "a" {}\n')
    tf = _terraform(Sandbox("bwrap", str(fake)), tmp_path)
    planned = plan(tf, Project("infra", "infra"), dirs)
    assert planned.plangate_fault and planned.plan is None
    assert planned.error is not None and "PLANGATE_SANDBOX" in planned.error and "new namespace" in planned.error


def test_apply_refuses_a_plan_file_changed_after_the_check(sandbox: Sandbox, tmp_path: Path) -> None:
    dirs = _dirs(tmp_path, 'resource "terraform_data" "a" { input = "x" }\n')
    tf = _terraform(sandbox, tmp_path, dirs.src)
    planned = plan(tf, Project("infra", "infra"), dirs)
    assert planned.plan is not None and planned.digest is not None
    with dirs.planfile.open("ab") as f:
        f.write(b"tampered")
    refused = tf.apply(dirs.src / "infra", dirs.planfile, planned.digest)
    assert not refused.ok and "changed after it was checked" in refused.output
    assert not (dirs.src / "infra" / "terraform.tfstate").exists()


def test_project_dirs_must_stay_inside_the_checkout(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "infra").mkdir(parents=True)
    (src / "link").symlink_to(tmp_path)
    (src / "infra" / "up").symlink_to("..")
    assert inside(src, "infra") == src / "infra"
    assert inside(src, ".") == src
    for bad in ("link", "link/src", "infra/up", "../x"):
        with pytest.raises(UnsafePathError) as err:
            inside(src, bad)
        assert str(tmp_path) not in str(err.value)
