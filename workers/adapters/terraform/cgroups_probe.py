"""Which memory cap this worker can give terraform steps, found once at start-up (PLANGATE_TF_CGROUP).

`auto` (the default) uses the worker's own cgroup when it is plangate's to manage: the root of what
the worker sees of the cgroup filesystem (a container's own cgroup, in its cgroup namespace, mounted
writable) or a cgroup delegated to it (systemd's `Delegate=`, which marks it with a `delegate`
xattr). Any other cgroup belongs to someone else (a login session, a service manager) and is left
alone. A path names a delegated directory instead; `off` keeps the per-process cap.

On cgroup v2 only a cgroup without processes of its own hands controllers to its children, so the
worker first moves the processes of its cgroup into a leaf (`plangate-worker`), as docker-in-docker
does (`docker exec` and `kubectl exec` then join that leaf: runc does so on EBUSY). A trial step (a
cgroup of its own, joined, removed) must then work, or the per-process cap stays in force.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from workers.adapters.terraform.cgroups import CgroupError, CgroupRoot, has_oom_count
from workers.adapters.terraform.sandbox import SandboxError

SETTING = "PLANGATE_TF_CGROUP"
LEAF = "plangate-worker"  # where the worker's own processes live once its cgroup hands out memory
_TRIAL_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class MemoryCap:
    """How PLANGATE_TF_MEMORY_MB holds here: per step in a cgroup under `cgroups`, else per process."""

    cgroups: CgroupRoot | None = None
    why: str = "not probed"  # why there is no cgroup

    def describe(self, mb: int) -> str:
        """One line for the start-up log."""
        if self.cgroups is not None:
            where = f"cgroup v{self.cgroups.version} under {self.cgroups.path}"
            return f"memory cap {mb} MB per step ({where})"
        return f"memory cap {mb} MB per process (RLIMIT_DATA; no cgroup: {self.why})"


def probe(setting: str) -> MemoryCap:
    """The memory cap this worker can give its steps; SandboxError when the path `setting` names is
    unusable (the operator asked for it: running without would be a surprise)."""
    if setting == "off":
        return MemoryCap(None, f"{SETTING}=off")
    shell = shutil.which("sh", path="/usr/bin:/bin")
    if setting != "auto":
        path = Path(setting)
        root, why = (None, "needs sh in /usr/bin or /bin") if shell is None else _usable(path, _version(path), shell)
        if root is None:
            raise SandboxError(f"setting {SETTING}: {setting} {why}")
        return MemoryCap(root, "")
    if shell is None:
        return MemoryCap(None, "no sh in /usr/bin or /bin to join a step to its cgroup")
    reasons = []
    for version, path, delegated in own_cgroups(_read("/proc/self/mountinfo"), _read("/proc/self/cgroup")):
        if not delegated:
            reasons.append(f"{path} is not delegated to plangate (set {SETTING})")
            continue
        root, why = _usable(path, version, shell)
        if root is not None:
            return MemoryCap(root, "")
        reasons.append(f"{path} {why}")
    return MemoryCap(None, "; ".join(reasons) or "no memory controller")


def own_cgroups(mountinfo: str, proc_cgroup: str) -> list[tuple[Literal[1, 2], Path, bool]]:
    """The worker's own cgroup directories, cgroup v2's first, then that of v1's memory hierarchy;
    each with whether it is plangate's to manage."""
    mounts: dict[Literal[1, 2], list[tuple[Path, str]]] = {1: [], 2: []}
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        fstype, _, options = line.split(" - ", 1)[1].split(" ")[:3]
        if fstype == "cgroup2":
            mounts[2].append((Path(_unescape(fields[4])), fields[3]))
        elif fstype == "cgroup" and "memory" in options.split(","):
            mounts[1].append((Path(_unescape(fields[4])), fields[3]))
    found: list[tuple[Literal[1, 2], Path, bool]] = []
    for line in proc_cgroup.splitlines():
        ident, controllers, path = [*line.split(":", 2), "", ""][:3]
        version: Literal[1, 2] = 2 if ident == "0" and not controllers else 1
        if version == 1 and "memory" not in controllers.split(","):
            continue
        for mount, mount_root in mounts[version]:
            rel = os.path.relpath(path, mount_root)
            if rel != ".." and not rel.startswith("../"):
                found.append((version, mount / rel, _delegated(mount / rel, rel)))
                break
    return sorted(found, key=lambda f: -f[0])


def _delegated(path: Path, rel: str) -> bool:
    if path.name == LEAF:
        return _delegated(path.parent, os.path.dirname(rel) or ".")
    return rel == "." or _marked_delegated(path)


def _marked_delegated(path: Path) -> bool:
    for name in ("trusted.delegate", "user.delegate"):  # systemd sets them; only root may read trusted.*
        with contextlib.suppress(OSError):
            if os.getxattr(path, name) == b"1":
                return True
    return False


def _version(path: Path) -> Literal[1, 2] | None:
    if (path / "cgroup.controllers").exists():
        return 2
    if (path / "memory.limit_in_bytes").exists():
        return 1
    return None


def _usable(path: Path, version: Literal[1, 2] | None, shell: str) -> tuple[CgroupRoot | None, str]:
    """A root for step cgroups at `path` (on v2 the memory controller handed to its children first),
    tried with one trial step; else None and why not."""
    if version is None:
        return None, "is neither a cgroup v2 directory nor one of cgroup v1's memory hierarchy"
    if version == 2:
        if path.name == LEAF:
            path = path.parent
        try:
            if "memory" not in _read(path / "cgroup.controllers").split():
                return None, "has no memory controller (not handed down by its parent, or bound to cgroup v1)"
            if "memory" not in _read(path / "cgroup.subtree_control").split():
                _hand_down_memory(path)
        except OSError as exc:
            return None, f"cannot hand out its memory controller ({exc.strerror or exc})"
    elif not has_oom_count(path / "memory.oom_control"):
        return None, "does not count OOM kills (Linux >= 4.13 does)"
    root = CgroupRoot(path, version, shell)
    why = _trial(root)
    return (root, "") if why is None else (None, why)


def _hand_down_memory(path: Path) -> None:
    """Enable the memory controller for the children of `path`. Only a cgroup without processes may
    (the true root excepted): on EBUSY, every process of `path` moves into its leaf first."""
    try:
        (path / "cgroup.subtree_control").write_text("+memory")
        return
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            raise
    leaf = path / LEAF
    leaf.mkdir(exist_ok=True)
    for _ in range(10):  # processes forked meanwhile are moved on the next round
        pids = _read(path / "cgroup.procs").split()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                (leaf / "cgroup.procs").write_text(pid)
    (path / "cgroup.subtree_control").write_text("+memory")


def _trial(root: CgroupRoot) -> str | None:
    """None when a process started as a step runs inside a capped cgroup of its own; else why not."""
    try:
        root.sweep()
        with root.step(_TRIAL_LIMIT) as cage:
            argv = cage.joining(["/bin/cat", "/proc/self/cgroup"])
            done = subprocess.run(argv, capture_output=True, timeout=30, check=False, env={"PATH": "/usr/bin:/bin"})
            if done.returncode != 0 or cage.path.name.encode() not in done.stdout:
                said = done.stderr.decode("utf-8", "replace").strip().splitlines()
                return f"cannot start a process in a cgroup of its own ({said[-1] if said else done.returncode})"
    except (CgroupError, OSError, subprocess.TimeoutExpired) as exc:
        return str(exc).removeprefix(f"setting {SETTING}: ")
    return None


def _read(path: str | Path) -> str:
    return Path(path).read_text()


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes."""
    for code in ("040", "011", "012", "134"):
        field = field.replace(f"\\{code}", chr(int(code, 8)))
    return field
