"""core.apply_order: waves, cycles, reverse order for destroys, what a failed or held dependency stops."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.apply_order import cycle, dependents, holdup, order_line, waits, waves
from core.apply_outcome import ApplyOutcome, Ending, held
from core.render.apply_status import apply_status

NAMES = [f"p{i}" for i in range(8)]


@st.composite
def acyclic(draw: st.DrawFn) -> dict[str, list[str]]:
    """A graph whose edges only point to earlier names (so no cycle), in a shuffled order."""
    n = draw(st.integers(1, len(NAMES)))
    graph = {NAMES[i]: draw(st.lists(st.sampled_from(NAMES[:i]), unique=True)) if i else [] for i in range(n)}
    keys = draw(st.permutations(list(graph)))
    return {k: graph[k] for k in keys}


@st.composite
def any_graph(draw: st.DrawFn) -> dict[str, list[str]]:
    n = draw(st.integers(1, 6))
    names = NAMES[:n]
    return {name: draw(st.lists(st.sampled_from(names), unique=True, max_size=3)) for name in names}


def _reaches(graph: dict[str, list[str]], start: str, goal: str) -> bool:
    seen, stack = set(), list(graph.get(start, ()))
    while stack:
        node = stack.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return False


@given(acyclic(), st.data())
def test_every_project_once_every_dependency_first(graph: dict[str, list[str]], data: st.DataObject) -> None:
    affected = data.draw(st.lists(st.sampled_from(list(graph)), unique=True, min_size=1))
    wait_for = waits(graph, affected)
    order = waves(wait_for)
    flat = [name for wave in order for name in wave]
    assert sorted(flat) == sorted(affected)
    position = {name: i for i, wave in enumerate(order) for name in wave}
    for name in affected:
        for dep in graph[name]:
            if dep in affected:
                assert position[dep] < position[name]
                assert dep in wait_for[name]
    for deps in wait_for.values():  # nothing waits on a project the change did not touch
        assert set(deps) <= set(affected)
    for i, wave in enumerate(order):  # as early as it can: something of the wave before holds it back
        for name in wave:
            assert i == 0 or any(position[d] == i - 1 for d in wait_for[name])


@given(acyclic(), st.data())
def test_destroys_go_in_reverse_order(graph: dict[str, list[str]], data: st.DataObject) -> None:
    affected = data.draw(st.lists(st.sampled_from(list(graph)), unique=True, min_size=1))
    destroyed = set(data.draw(st.lists(st.sampled_from(affected), unique=True)))
    try:
        wait_for = waits(graph, affected, destroyed)
    except ValueError:
        return  # a mix of reversed and kept edges can loop: refused, never half-ordered
    position = {name: i for i, wave in enumerate(waves(wait_for)) for name in wave}
    for name in affected:
        for dep in graph[name]:
            if dep in affected:
                reversed_edge = name in destroyed or dep in destroyed
                first, then = (name, dep) if reversed_edge else (dep, name)
                assert position[first] < position[then]


def test_only_destroyed_projects_reverse_the_chain() -> None:
    chain = {"net": [], "cluster": ["net"], "app": ["cluster"]}
    assert waves(waits(chain, ["app", "net", "cluster"])) == [["net"], ["cluster"], ["app"]]
    gone = waits(chain, ["net", "cluster", "app"], {"net", "cluster", "app"})
    assert waves(gone) == [["app"], ["cluster"], ["net"]]
    assert waits(chain, ["app", "net"]) == {"app": (), "net": ()}  # cluster untouched: no order left


@given(any_graph())
def test_cycle_is_found_exactly_when_there_is_one(graph: dict[str, list[str]]) -> None:
    loop = cycle(graph)
    has_loop = any(_reaches(graph, name, name) for name in graph)
    assert (loop is not None) == has_loop
    if loop is not None:
        assert loop[0] == loop[-1] and len(set(loop[:-1])) == len(loop) - 1
        for first, then in itertools.pairwise(loop):
            assert first in graph[then]  # each one is depended on by the next: applied before it
        with pytest.raises(ValueError, match="cycle"):
            waits(graph, list(graph))
    else:
        assert sorted(n for w in waves(waits(graph, list(graph))) for n in w) == sorted(graph)


def test_cycle_is_named_in_apply_order() -> None:
    graph = {"net": ["app"], "cluster": ["net"], "app": ["cluster"]}
    assert cycle(graph) == ["net", "cluster", "app", "net"]
    assert cycle({"a": ["a"]}) == ["a", "a"]
    assert cycle({"a": ["b"], "b": []}) is None
    with pytest.raises(ValueError, match="cycle net → cluster → app → net"):
        waits(graph, ["net", "cluster", "app"])


@given(acyclic(), st.data())
def test_dependents_are_transitive(graph: dict[str, list[str]], data: st.DataObject) -> None:
    names = data.draw(st.lists(st.sampled_from(list(graph)), unique=True))
    found = dependents(graph, names)
    expected = [n for n in graph if any(_reaches(graph, n, name) for name in names)]
    assert found == expected


OK = ApplyOutcome(Ending.APPLIED)


@pytest.mark.parametrize(
    ("outcome", "text"),
    [
        (ApplyOutcome(Ending.FAILED), "waiting on cluster (failed)"),
        (held(2, trusted=True), "waiting on cluster (blocked)"),
        (held(0, trusted=False), "waiting on cluster (blocked)"),
        (ApplyOutcome(Ending.ERROR), "waiting on cluster (died)"),
        (ApplyOutcome(Ending.LOST), "waiting on cluster (lost)"),
        (None, "waiting on cluster (died)"),
    ],
)
def test_a_dependency_that_did_not_apply_holds_its_dependent(outcome: ApplyOutcome | None, text: str) -> None:
    wait_for = {"net": (), "cluster": ("net",), "app": ("cluster",)}
    outcomes = {"net": OK} | ({"cluster": outcome} if outcome else {})
    found = holdup("app", wait_for, outcomes)
    assert found is not None and found.text() == text


@pytest.mark.parametrize("ending", [Ending.APPLIED, Ending.NOOP, Ending.NOT_APPLIED])
def test_a_dependency_that_ended_well_holds_nothing(ending: Ending) -> None:
    wait_for = {"net": (), "app": ("net",)}
    assert holdup("app", wait_for, {"net": ApplyOutcome(ending)}) is None
    assert holdup("net", wait_for, {}) is None


def test_a_chain_names_its_root() -> None:
    wait_for = {"net": (), "cluster": ("net",), "app": ("cluster",)}
    outcomes = {"net": ApplyOutcome(Ending.FAILED), "cluster": ApplyOutcome(Ending.WAITING)}
    found = holdup("app", wait_for, outcomes)
    assert found is not None
    assert found.text() == "waiting on cluster (waiting on net (failed))"
    assert (found.dependency, found.root) == ("cluster", "net")


def test_order_line() -> None:
    assert order_line({"net": (), "cluster": ("net",), "app": ("cluster",)}) == "net → cluster → app"
    assert order_line({"net": (), "dns": (), "app": ("net", "dns")}) == "net, dns → app"
    assert order_line({"net": (), "dns": ()}) is None


def test_waiting_turns_the_apply_status_red() -> None:
    state, text = apply_status({"net": ApplyOutcome(Ending.APPLIED), "app": ApplyOutcome(Ending.WAITING)})
    assert state == "failure" and "waiting on a dependency: app" in text
    state, _ = apply_status({"net": ApplyOutcome(Ending.FAILED), "app": ApplyOutcome(Ending.WAITING)})
    assert state == "failure"


def test_a_dependency_left_to_a_newer_held_apply_holds_its_dependent() -> None:
    """`superseded`: a newer push's apply of net is held, so what this commit changed in net is not applied."""
    wait_for = {"net": (), "app": ("net",)}
    found = holdup("app", wait_for, {"net": ApplyOutcome(Ending.SUPERSEDED)})
    assert found is not None and found.text() == "waiting on net (held at a newer commit)"
    state, text = apply_status({"net": ApplyOutcome(Ending.SUPERSEDED), "dns": ApplyOutcome(Ending.APPLIED)})
    assert state == "success" and text == "applied 1 project; 1 left to a newer push's held apply"
    assert ApplyOutcome.read(ApplyOutcome(Ending.SUPERSEDED).stored()) == ApplyOutcome(Ending.SUPERSEDED)
