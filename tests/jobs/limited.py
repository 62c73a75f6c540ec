"""A job that meets a long GitHub rate limit on its first run (for tests/test_deferral.py)."""

from __future__ import annotations

from rq import get_current_job

from workers.adapters.github.client import RateLimited, deferrable
from workers.rescheduling import reschedulable


@reschedulable
def limited_once(wait: float) -> str:
    job = get_current_job()
    assert job is not None
    runs = int(job.meta.get("runs", 0)) + 1
    job.meta["runs"] = runs
    job.save_meta()  # type: ignore[no-untyped-call]
    if runs == 1:
        assert deferrable.get()  # the job may be re-run from its start
        raise RateLimited(wait, "secondary")
    return f"ran {runs} times"
