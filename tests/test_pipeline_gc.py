"""The cyclic GC is paused while a plan's JSON is parsed, and always given back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.plan import Plan, parse_plan
from core.projects import Project
from tests.test_sandbox import _dirs, _terraform
from workers.adapters.terraform import pipeline
from workers.adapters.terraform.pipeline import gc_paused
from workers.adapters.terraform.sandbox import Sandbox


@pytest.fixture(autouse=True)
def gc_restored() -> Iterator[None]:
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_inside_and_enabled_after_even_on_error() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("parse failed")
    assert gc.isenabled()


def test_a_caller_that_disabled_it_keeps_it_disabled() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_pipeline_parses_with_the_gc_paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def parse_watched(raw: bytes, *, attributes: bool = False) -> Plan:
        seen.append(gc.isenabled())
        return parse_plan(raw, attributes=attributes)

    monkeypatch.setattr(pipeline, "parse_plan", parse_watched)
    gc.enable()
    dirs = _dirs(tmp_path, 'resource "terraform_data" "x" {\n  input = "a"\n}\n')
    planned = pipeline.plan(_terraform(Sandbox("off"), tmp_path), Project("infra", "infra"), dirs)
    assert planned.plan is not None, planned.error
    assert seen == [False]
    assert gc.isenabled()
