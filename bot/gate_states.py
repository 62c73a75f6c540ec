"""The newest gate verdict per (repository, PR, commit, status context), from the run log, for the status page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_CONTEXTS = {"plan": "plangate/destroy", "approval": "plangate/destroy", "apply": "plangate/apply"}


@dataclass
class GateState:
    """The newest gate verdict recorded for one status context on one commit."""

    repo: str
    number: Any
    sha: str
    context: str
    state: str
    description: str
    at: Any
    projects: list[str] = field(default_factory=list)


def gate_states(runs: Sequence[Mapping[str, Any]]) -> list[GateState]:
    """Per (repo, number, sha, context): the newest run's gate, with every project seen there. Runs are newest first."""
    found: dict[tuple[str, str, str, str], GateState] = {}
    for run in runs:
        if not run.get("gate"):
            continue
        context = _CONTEXTS.get(str(run.get("kind")), f"plangate/{run.get('kind')}")
        key = (str(run.get("repo")), str(run.get("number")), str(run.get("sha")), context)
        if key not in found:
            found[key] = GateState(
                repo=_text(run.get("repo")),
                number=run.get("number"),
                sha=_text(run.get("sha")),
                context=context,
                state=_text(run.get("gate")),
                description=_text(run.get("gate_description")),
                at=run.get("at"),
            )
        project = _text(run.get("project"))
        if project and project not in found[key].projects:
            found[key].projects.append(project)
    return list(found.values())


def _text(value: Any) -> str:
    return "" if value is None else str(value)
