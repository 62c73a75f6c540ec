"""A commit's files, checked out once per host and shared read-only by the jobs that plan it.

A PR that touches many projects of a monorepo runs many plans, and a private checkout per plan
writes the whole tree every time (on a small VM, ~0.5 s of kernel time for 200 project
directories: more than terraform takes to plan one of them). Instead the first job on a host checks
the commit out under `trees/<repo>/<sha>`; the PR's dispatch reads it, and each plan job's sandbox
shows it read-only with the job's own copy of its project directory mounted on top, so the plan can
read what a private checkout would hold, write its `.terraform/` and lock file, and change nothing
another job reads. Only with the sandbox on: without it a plan could write to the shared tree.

A job makes or enters a tree holding `<sha>.lock` (briefly) and uses it holding a shared flock on
`<sha>.use`; maintenance removes trees idle for an hour when it can take both exclusively. The
small lock files stay.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from workers.adapters.checkout import CheckoutError, checkout, is_sha, wait_flock

IDLE_AFTER = 3600  # seconds since a tree was last used before maintenance removes it
_STAGING = ".staging-"


@contextlib.contextmanager
def shared_tree(
    root: Path, repo_id: int, sha: str, clone_url: str, token: str | None, *, timeout: float, cache: Path
) -> Iterator[Path]:
    """The checked-out commit `sha` under `root`, made once per host, held in use until the block ends."""
    if not is_sha(sha):
        raise CheckoutError(f"not a full commit SHA: {sha!r}")
    base = root / str(int(repo_id))
    base.mkdir(parents=True, exist_ok=True)
    tree = base / sha
    deadline = time.monotonic() + timeout
    with (base / f"{sha}.lock").open("a") as making, (base / f"{sha}.use").open("a") as using:
        wait_flock(making, fcntl.LOCK_EX, deadline)  # held only while the tree is made (or swept)
        try:
            if not tree.is_dir():
                _make(tree, clone_url, sha, token, deadline, cache)
            fcntl.flock(using, fcntl.LOCK_SH)  # in use: jobs share it, the sweeper leaves it
        finally:
            fcntl.flock(making, fcntl.LOCK_UN)
        os.utime(using.name)
        yield tree


def _make(tree: Path, clone_url: str, sha: str, token: str | None, deadline: float, cache: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f"{sha}{_STAGING}", dir=tree.parent))
    try:
        checkout(clone_url, sha, staging, token, timeout=max(deadline - time.monotonic(), 1.0), cache=cache)
        staging.rename(tree)  # complete or absent: a job that died mid-checkout leaves only staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def sweep(root: Path, now: float | None = None) -> int:
    """Remove trees idle for IDLE_AFTER and not in use, and staging left by dead jobs; how many."""
    cutoff = (now or time.time()) - IDLE_AFTER
    removed = 0
    for use_path in root.glob("*/*.use"):
        if use_path.stat().st_mtime >= cutoff:
            continue
        tree = use_path.with_suffix("")
        with tree.with_suffix(".lock").open("a") as making, use_path.open("a") as using:
            try:
                fcntl.flock(making, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no job is making or entering it
                fcntl.flock(using, fcntl.LOCK_EX | fcntl.LOCK_NB)  # and none is using it
            except BlockingIOError:
                continue
            if tree.is_dir():
                shutil.rmtree(tree, ignore_errors=True)
                removed += 1
    for staging in root.glob(f"*/*{_STAGING}*"):
        if staging.stat().st_mtime < cutoff:
            shutil.rmtree(staging, ignore_errors=True)
    return removed
