"""Every job is enqueued by a name of core.contract.Jobs: each names a job function of workers.jobs, and
every job function there has a name (a renamed job cannot leave a caller enqueueing a function RQ
cannot find)."""

from __future__ import annotations

import inspect

from core.contract import LAST_WORD_JOBS, Jobs
from plumbing.job_options import FAILED, OPTIONS
from workers import jobs

NAMES = {value for key, value in vars(Jobs).items() if key.isupper()}


def test_every_name_is_a_job() -> None:
    for name in NAMES:
        module, _, function = name.rpartition(".")
        assert module == "workers.jobs", name
        assert callable(getattr(jobs, function, None)), name


def test_every_job_has_a_name() -> None:
    defined = {
        f"workers.jobs.{name}"
        for name, value in vars(jobs).items()
        if inspect.isfunction(value) and not name.startswith("_") and inspect.unwrap(value).__module__ == "workers.jobs"
    }
    assert defined == NAMES


def test_the_job_sets_name_jobs() -> None:
    assert LAST_WORD_JOBS <= NAMES
    assert set(OPTIONS) <= NAMES


def test_a_job_that_owes_a_report_gets_its_last_word() -> None:
    for name in LAST_WORD_JOBS:
        assert OPTIONS[name].on_failure is FAILED, name
