"""Housekeeping jobs scheduled by `plangate cron`."""

from __future__ import annotations

import time
from pathlib import Path

from plumbing import settings as settings_module
from workers.adapters import trees
from workers.adapters.checkout import remove_tree

STALE_AFTER = 6 * 3600  # a checkout older than any job timeout belongs to a worker that died


def sweep_workdirs(root: str | None = None, now: float | None = None) -> int:
    """Remove per-job checkouts (`checkouts/…/run-*`) left behind by killed workers, and shared trees
    of commits no job has used for an hour (`trees/`); returns how many."""
    workdir = Path(root) if root else settings_module.load().workdir
    removed = trees.sweep(workdir / "trees", now) if (workdir / "trees").is_dir() else 0
    base = workdir / "checkouts"
    if not base.is_dir():
        return removed
    cutoff = (now or time.time()) - STALE_AFTER
    for run in base.glob("*/*/*/*/run-*"):
        if run.is_dir() and run.stat().st_mtime < cutoff:
            remove_tree(run)
            removed += 1
    return removed
