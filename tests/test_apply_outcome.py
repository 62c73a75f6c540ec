"""Apply outcomes: what is stored reads back as the same outcome, and nothing else reads at all."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.apply_outcome import HELD, ApplyOutcome, Ending, held

outcomes = st.one_of(
    st.sampled_from([ApplyOutcome(e) for e in Ending if e not in HELD]),
    st.builds(held, st.integers(1, 10**6), trusted=st.just(True)),
    st.builds(held, st.integers(0, 10**6), trusted=st.just(False)),
)


@given(outcomes)
def test_what_is_stored_reads_back(outcome: ApplyOutcome) -> None:
    assert ApplyOutcome.read(outcome.stored()) == outcome


@given(st.text(max_size=20))
def test_only_stored_forms_read(text: str) -> None:
    try:
        outcome = ApplyOutcome.read(text)
    except ValueError:
        return
    assert outcome.stored() == text or text == "blocked:0"


def test_the_stored_forms() -> None:
    assert held(3, trusted=True).stored() == "blocked:3"
    assert held(0, trusted=False).stored() == "untrusted:0"
    assert ApplyOutcome(Ending.NOT_APPLIED).stored() == "not-applied"
    assert ApplyOutcome.read("blocked:0") == ApplyOutcome(Ending.UNTRUSTED)


@pytest.mark.parametrize("text", ["", "blocked", "applied:1", "blocked:-1", "blocked:x", "blocked:١", "Applied"])
def test_malformed_outcomes_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="unknown apply outcome"):
        ApplyOutcome.read(text)


def test_only_a_held_apply_counts_destroys() -> None:
    with pytest.raises(ValueError):
        ApplyOutcome(Ending.APPLIED, 2)
    with pytest.raises(ValueError):
        ApplyOutcome(Ending.BLOCKED, 0)
    assert {e for e in Ending if e in HELD} == {Ending.BLOCKED, Ending.UNTRUSTED}
