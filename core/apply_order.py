"""`depends_on` between projects → the order a merge applies them in (pure).

A graph maps each project name to the names it depends on. "A before B" means B depends on A: A is
applied first. Only the projects a change affects are ordered among themselves: an unaffected
dependency is not applied, so its dependents wait for nothing. A project the change deleted is
destroyed, and an edge touching a destroy runs the other way (reverse order): a dependent goes before
what it depends on, so nothing is destroyed while something still standing relies on it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from core.apply_outcome import ApplyOutcome, Ending

Graph = Mapping[str, Sequence[str]]

# How a dependency's apply must have ended for its dependents to go on. `not-applied`: left to humans
# (`apply_on_merge: false`) or already applied at a newer commit; nothing of it is in doubt. Not
# `superseded`: a newer push's apply of it is held, so this commit's changes to it are not applied yet.
GOES_ON = frozenset({Ending.APPLIED, Ending.NOOP, Ending.NOT_APPLIED})
_WHY = {
    Ending.FAILED: "failed",
    Ending.ERROR: "died",
    Ending.LOST: "lost",
    Ending.BLOCKED: "blocked",
    Ending.UNTRUSTED: "blocked",
    Ending.WAITING: "waiting",
    Ending.SUPERSEDED: "held at a newer commit",
}


def cycle(graph: Graph) -> list[str] | None:
    """A cycle of the graph in apply order, its first project repeated at the end (`[net, cluster, app,
    net]`: net before cluster before app before net), starting from the first project (in the graph's
    order) found on one; None when there is none. Names the graph does not hold are ignored."""
    before = _before(graph)
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    for start in graph:
        if state.get(start):
            continue
        path, stack = [start], [iter(before[start])]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif not state.get(nxt):
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(before[nxt]))
    return None


def _before(graph: Graph) -> dict[str, list[str]]:
    """Name → the names that come after it (its dependents), in the graph's order."""
    after: dict[str, list[str]] = {name: [] for name in graph}
    for name, deps in graph.items():
        for dep in deps:
            if dep in after and name not in after[dep]:
                after[dep].append(name)
    return after


def waits(graph: Graph, affected: Sequence[str], destroyed: Collection[str] = ()) -> dict[str, tuple[str, ...]]:
    """Each affected project → the affected projects whose apply must end before its own starts.
    An edge touching a destroyed project is reversed (the dependent goes first). ValueError on a cycle."""
    chosen = dict.fromkeys(affected)
    found: dict[str, list[str]] = {name: [] for name in chosen}
    for name in chosen:
        for dep in graph.get(name, ()):
            if dep not in chosen:
                continue
            first, then = (name, dep) if name in destroyed or dep in destroyed else (dep, name)
            if first not in found[then]:
                found[then].append(first)
    result = {name: tuple(deps) for name, deps in found.items()}
    loop = cycle(result)
    if loop is not None:
        raise ValueError(f"cycle {' → '.join(loop)}")
    return result


def waves(wait_for: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """`waits`' result in waves: each wave's projects wait only on earlier waves, as early as they can."""
    level: dict[str, int] = {}
    left = list(wait_for)
    while left:
        ready = [n for n in left if all(d in level for d in wait_for[n] if d in wait_for)]
        if not ready:
            raise ValueError("cycle among " + ", ".join(left))
        for name in ready:
            level[name] = 1 + max((level[d] for d in wait_for[name] if d in wait_for), default=-1)
        left = [n for n in left if n not in level]
    found: list[list[str]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for name in wait_for:
        found[level[name]].append(name)
    return found


def dependents(graph: Graph, names: Iterable[str]) -> list[str]:
    """Every project depending on one of `names`, directly or through others, in the graph's order
    (`names` themselves excluded unless one depends on another)."""
    after = _before(graph)
    seen: set[str] = set()
    stack = list(names)
    while stack:
        for dependent in after.get(stack.pop(), ()):
            if dependent not in seen:
                seen.add(dependent)
                stack.append(dependent)
    return [name for name in graph if name in seen]


@dataclass(frozen=True)
class Holdup:
    """Why a project may not be applied yet: `dependency` ended as `why`; when it is itself waiting,
    `root` is the project at the bottom of the chain and `root_why` how that one ended."""

    dependency: str
    why: str
    root: str
    root_why: str

    def text(self) -> str:
        """ "waiting on NAME (failed)", or through a chain "waiting on cluster (waiting on net (failed))"."""
        inner = self.why if self.root == self.dependency else f"waiting on {self.root} ({self.root_why})"
        return f"waiting on {self.dependency} ({inner})"


def holdup(name: str, wait_for: Mapping[str, Sequence[str]], outcomes: Mapping[str, ApplyOutcome]) -> Holdup | None:
    """The first of `name`'s dependencies (`waits`' result) whose apply did not end in a way its
    dependents may go on from; None when all did. No outcome at all (its job died for good, or Redis lost
    it) holds too: whether it applied is unknown."""
    for dep in wait_for.get(name, ()):
        why = _why(outcomes.get(dep))
        if why is None:
            continue
        root, root_why, seen = dep, why, {name}
        while root_why == "waiting" and root not in seen:
            seen.add(root)
            below = next(((d, w) for d in wait_for.get(root, ()) if (w := _why(outcomes.get(d))) is not None), None)
            if below is None:
                break
            root, root_why = below
        return Holdup(dep, why, root, root_why)
    return None


def _why(outcome: ApplyOutcome | None) -> str | None:
    if outcome is None:
        return "died"
    return None if outcome.ending in GOES_ON else _WHY.get(outcome.ending, str(outcome.ending))


def order_line(wait_for: Mapping[str, Sequence[str]]) -> str | None:
    """How the plan comment says the order a merge will use: "net → cluster → app", waves side by side
    ("net → cluster, dns → app"); None when nothing waits on anything (all at once)."""
    if not any(wait_for.values()):
        return None
    return " → ".join(", ".join(wave) for wave in waves(wait_for))
