"""The sandbox every terraform/tofu process runs in: bubblewrap, and nothing of the host it does not need.

A plan runs the pull request's code (providers from the repository, `external` data sources,
`file()` on anything readable), so terraform is treated as hostile. Inside the sandbox it has:
its own user, PID, IPC, UTS and cgroup namespaces (so `/proc` shows only its own processes, and
only when the kernel lets a fresh one be mounted, else there is no `/proc` at all); the system's
programs and libraries and the few `/etc` files that name resolution and TLS need, read-only; a
private tmpfs `/tmp` holding HOME; the paths the step needs (the job's checkout, a plugin cache,
the plan file's directory); and the host paths the operator grants the step's phase
(core/sandbox_paths.py: a PR's plan writes none unless told to). The network is shared:
providers and backends need it, which is why Redis needs a password and gate records are signed.

bubblewrap beats the alternatives here: a second uid alone still sees every process's argv and
the worker's files it can read; a runner container per plan needs a container runtime inside the
worker. bwrap needs only unprivileged user namespaces, starts in milliseconds and works the same
on a host, in CI (as root) and in a container whose seccomp/AppArmor profile permits namespaces.

The environment of bwrap itself is the clean one terraform gets (its PID-1 reaper keeps bwrap's
environ, which the sandbox can read): the caller's env must never hold a secret.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from core import redis_keys
from core.sandbox_paths import GRANT_PHASES, Grant, SandboxPaths

SANDBOX_KEY_PREFIX = redis_keys.SANDBOX_PREFIX  # + worker name → describe(): what the status page shows
SANDBOX_RECORD_TTL = redis_keys.SANDBOX_TTL
SANDBOX_HOME = "/tmp/home"
SUPERVISOR_SHELL = "supervisor-sh"  # in the probe directory: the execute-only shell (sandbox_session.py)
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What name resolution, TLS and user lookups read; nothing here holds a secret (so of /etc/ssl and
# Red Hat's /etc/pki only the CA certificates and OpenSSL's settings: their `private/` directories
# hold the host's TLS keys).
_ETC = (
    "resolv.conf",
    "hosts",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "ssl/certs",
    "ssl/cert.pem",
    "ssl/ca-bundle.pem",
    "ssl/openssl.cnf",
    "ca-certificates",
    "ca-certificates.conf",
    "pki/tls/certs",
    "pki/tls/cert.pem",
    "pki/tls/openssl.cnf",
    "pki/ca-trust/extracted",
    "alternatives",
    "passwd",
    "group",
    "localtime",
)


class SandboxError(RuntimeError):
    """The sandbox (or a step's memory cgroup) cannot be set up; str() is one line naming the setting."""


@dataclass(frozen=True)
class Sandbox:
    """How terraform runs: `mode` "bwrap" (with `bwrap`'s path) or "off" (the operator's explicit risk)."""

    mode: str = "off"
    bwrap: str | None = None
    proc: bool = True  # a fresh /proc could be mounted (not in every container)
    grants: tuple[Grant, ...] = field(default=())
    disable_userns: bool = True  # bwrap >= 0.8: no nested user namespace inside the sandbox
    # An execute-only copy of `sh` that runs a project sandbox's steps (sandbox_session.py); None: a sandbox per step.
    supervisor: str | None = None

    @property
    def enabled(self) -> bool:
        return self.mode == "bwrap"

    def home(self, fallback: Path) -> Path:
        """HOME for terraform: private inside the sandbox, `fallback` without one."""
        return Path(SANDBOX_HOME) if self.enabled else fallback

    def wrap(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        writable: Sequence[Path] = (),
        readable: Sequence[Path] = (),
        mounts: Sequence[tuple[Path, Path]] = (),
        as_pid_1: bool = False,
    ) -> list[str]:
        """`argv` (argv[0] an absolute path) as run inside the sandbox; unchanged when it is off.

        `mounts`: (source, target) pairs mounted writable at `target`, over what `readable` shows
        there (a job's own copy of its project directory on a shared read-only tree). `as_pid_1`:
        `argv` is the PID namespace's init (a session's supervisor), with no bwrap reaper above it."""
        if not self.enabled:
            return list(argv)
        assert self.bwrap is not None
        args = [
            self.bwrap,
            "--unshare-user",
            "--unshare-pid",
            *(["--as-pid-1"] if as_pid_1 else []),
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            *(["--disable-userns"] if self.disable_userns else []),
            "--cap-drop",
            "ALL",
            "--die-with-parent",
            "--hostname",
            "sandbox",
            *_system_binds(),
            "--dev",
            "/dev",
            *(["--proc", "/proc"] if self.proc else []),
            "--tmpfs",
            "/tmp",
            "--dir",
            SANDBOX_HOME,
            "--setenv",
            "HOME",
            SANDBOX_HOME,
            "--setenv",
            "TMPDIR",
            "/tmp",
        ]
        exe = argv[0]
        if not _under_system(exe):
            args += ["--ro-bind", exe, exe]
        for path in readable:
            args += ["--ro-bind", str(path), str(path)]
        for path in writable:
            args += ["--bind", str(path), str(path)]
        for source, target in mounts:
            args += ["--bind", str(source), str(target)]
        for grant in self.grants:
            args += ["--bind" if grant.writable else "--ro-bind", str(grant.path), str(grant.path)]
        # A project sandbox's root (`/etc` around the files shown, the directories made to mount on)
        # read-only: a file a step left there would still be there for the next. A sandbox per step
        # starts with a fresh one, which the step may write as before (a tool writing /var/tmp).
        ro_root = ["--remount-ro", "/"] if as_pid_1 else []
        return [*args, *ro_root, "--chdir", str(cwd), "--", *argv]

    def shows(self, exe: str) -> bool:
        """Is `exe` in the system directories every sandbox shows (else a step binds it)?"""
        return _under_system(exe)

    def visible(self, path: Path) -> bool:
        """Could a sandboxed process read `path`? (Secret files must answer False.)"""
        if not self.enabled:
            return True
        roots = [Path(d) for d in _SYSTEM_DIRS] + [Path("/etc", n) for n in _ETC] + [g.path for g in self.grants]
        return shown_by(path, roots)


def shown_by(path: Path, roots: Iterable[Path]) -> bool:
    """Is `path` one of `roots` or inside one, symlinks resolved on both sides (bwrap mounts what a
    granted symlink points to)?"""
    real = Path(os.path.realpath(path))
    return any(real == r or r in real.parents for r in (Path(os.path.realpath(root)) for root in roots))


def _under_system(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d + "/") for d in _SYSTEM_DIRS if os.path.isdir(d))


def _system_binds() -> list[str]:
    args: list[str] = []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            args += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for name in _ETC:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def _try(sandbox: Sandbox, probe_dir: Path) -> str | None:
    """None when a trivial command runs in `sandbox`; else bwrap's complaint."""
    true = shutil.which("true", path="/usr/bin:/bin") or "/bin/true"
    argv = sandbox.wrap([true], cwd=probe_dir, writable=[probe_dir])
    try:
        done = subprocess.run(argv, env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:][0] if done.stderr.strip() else "failed"


def prepare(mode: str, paths: SandboxPaths, probe_dir: Path) -> Sandbox:
    """The sandbox this host can run, probed once at start-up with every granted path mounted;
    SandboxError says why not. It shows no granted path: a step gets those of its phase."""
    if mode == "off":
        return Sandbox("off")
    found = shutil.which("bwrap")
    if found is None:
        raise SandboxError(
            "setting PLANGATE_SANDBOX: bwrap (bubblewrap) is not installed; install it "
            "(Debian: apt-get install bubblewrap) or set PLANGATE_SANDBOX=off to accept the risk"
        )
    for grant in paths.every:
        if grant.writable:
            grant.path.mkdir(parents=True, exist_ok=True)
        elif not grant.path.exists():
            raise SandboxError(f"setting {paths.setting_of(grant.path)}: {grant.path} does not exist")
    probe_dir.mkdir(parents=True, exist_ok=True)
    help_text = subprocess.run([found, "--help"], capture_output=True, check=False, timeout=30).stdout
    disable_userns = b"--disable-userns" in help_text
    with_proc = Sandbox("bwrap", found, True, paths.every, disable_userns)
    if _try(with_proc, probe_dir) is None:
        return _with_supervisor(replace(with_proc, grants=()), probe_dir)
    without_proc = replace(with_proc, proc=False)
    why = _try(without_proc, probe_dir)
    if why is None:
        return _with_supervisor(replace(without_proc, grants=()), probe_dir)
    raise SandboxError(
        f"setting PLANGATE_SANDBOX: bubblewrap cannot start a sandbox here ({why}); allow user namespaces "
        "(and, in a container, a seccomp/AppArmor profile that permits them) or set PLANGATE_SANDBOX=off "
        "to accept the risk"
    )


def _with_supervisor(sandbox: Sandbox, probe_dir: Path) -> Sandbox:
    """`sandbox` with a project sandbox's supervisor (sandbox_session.py): an execute-only copy of `sh`, which
    the kernel makes non-dumpable, so no step can ptrace it or open its descriptors. Kept only when a
    process inside cannot read the copy's environ (else every step gets a sandbox of its own)."""
    if not sandbox.proc:  # nothing to check that the copy is out of reach with
        return sandbox
    shell = os.path.realpath(shutil.which("sh", path="/usr/bin:/bin") or "/bin/sh")
    copy = probe_dir / SUPERVISOR_SHELL
    copy.unlink(missing_ok=True)
    shutil.copyfile(shell, copy)
    copy.chmod(0o111)
    argv = sandbox.wrap(
        [str(copy), "-c", '/bin/sh -c "cat /proc/1/environ" >/dev/null 2>&1 && exit 3; exit 0'],
        cwd=probe_dir,
        as_pid_1=True,
    )
    try:
        done = subprocess.run(argv, env={"PATH": "/usr/bin:/bin"}, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return sandbox
    return replace(sandbox, supervisor=str(copy)) if done.returncode == 0 else sandbox


def describe(sandbox: Sandbox, paths: SandboxPaths) -> str:
    """One line for logs and the status page: the sandbox, and which granted paths each phase sees
    how (`bubblewrap (private /proc); plan sees /srv/state (ro); apply sees /srv/state (rw)`)."""
    if not sandbox.enabled:
        return "OFF: terraform runs with the worker's own view of the host (PLANGATE_SANDBOX=off)"
    proc = "private /proc" if sandbox.proc else "no /proc"
    per = "one sandbox per project" if sandbox.supervisor else "one sandbox per step"
    seen = [f"{phase} sees {_listed(paths.grants(phase))}" for phase in GRANT_PHASES]
    return "; ".join([f"bubblewrap ({proc}, {per})", *seen])


def _listed(grants: tuple[Grant, ...]) -> str:
    shown = [f"{g.path} ({'rw' if g.writable else 'ro'})" for g in grants]
    return ", ".join(shown) or "no granted path"
