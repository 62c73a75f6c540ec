"""Code an apply would run beyond the providers' planned changes, read from a plan's `configuration`
(pure: data in, data out).

Provisioners run at apply with the apply's credentials, and so does the program of an `external` data
source read at apply: a plan that destroys nothing can still run anything. What terraform's JSON shows
(terraform 1.11, see tests/test_plan_code_terraform.py): each provisioner's `type` and `expressions`,
but never `when` (a destroy-time provisioner looks like a create-time one), and no `removed` block at
all, though a `removed` block's provisioners run when its object is destroyed. So, failing closed,
every provisioner of a resource counts at create, replace and delete alike. A `removed` block's run
only with the destroy of an object no longer configured, and that destroy is gated already: it is not
listed again as code (what the block runs is in the change under review).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from core.plan_json import PlanError, Values, digest, masked


@dataclass(frozen=True)
class CodeRun:
    """Code an apply of this plan would run beyond the providers' planned changes."""

    key: str  # what an approval names; ALWAYS starts with "run " (terraform addresses never do), unique in a plan
    what: str  # for people: e.g. "local-exec provisioner of terraform_data.x (at create)"
    digest: str  # 32 hex: exactly what would run (the provisioners' configuration; the provider files)


class Change(Protocol):
    """What this module reads of a classified resource change (core.plan.ResourceChange)."""

    @property
    def address(self) -> str: ...
    @property
    def mode(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def actions(self) -> tuple[str, ...]: ...
    @property
    def action_class(self) -> str: ...
    @property
    def deposed(self) -> str | None: ...


# An instance key: [0] or ["k"], the string with terraform's escapes (\" and \\) inside.
_INSTANCE_KEY = re.compile(r'\[(?:"(?:[^"\\]|\\.)*"|[^\]"]*)\]')

# When, in words, a change runs its resource's provisioners (by action class).
_PHASES = {"create": "at create", "replace": "at replace", "delete": "at destroy", "forget": "at create"}


def code_runs(configuration: Any, changes: Sequence[tuple[Change, Values]]) -> tuple[CodeRun, ...]:
    """One CodeRun per change whose apply runs code; `changes` pairs each change with its raw `change`
    object. No `configuration` at all (terraform always writes one; hand-made JSON may not): nothing is
    known of provisioners, so none is claimed. A malformed one raises PlanError: never "no code"."""
    if configuration is None:
        return ()
    resources = configured_resources(configuration)
    runs = []
    for change, raw in changes:
        run = _run(change, raw, resources)
        if run is not None:
            runs.append(run)
    return tuple(runs)


def _run(change: Change, raw: Values, resources: dict[str, dict[str, Any]]) -> CodeRun | None:
    resource = resources.get(config_address(change.address))
    if change.mode == "data":
        if change.type != "external" or "read" not in change.actions:
            return None
        return CodeRun(
            key=f"run external program of {change.address}",
            what=f"external program of {change.address} (read at apply)",
            digest=digest(
                {
                    "address": change.address,
                    "expressions": (resource or {}).get("expressions"),
                    "after": masked(raw.get("after"), raw.get("after_sensitive")),
                }
            ),
        )
    unknown = change.action_class == "unknown"
    if not (unknown or "create" in change.actions or "delete" in change.actions):
        return None
    provisioners = None if resource is None else resource.get("provisioners")
    if not provisioners:  # none, or no longer configured: a delete, gated as a destroy (module docstring)
        return None
    label = f"{change.address} (deposed {change.deposed})" if change.deposed else change.address
    phase = "at apply" if unknown else _PHASES.get(change.action_class, "at apply")
    facts = {
        "address": change.address,
        "deposed": change.deposed,
        "actions": list(change.actions),
        # provisioners read `self`: the object's values are part of what they run (secrets masked)
        "before": masked(raw.get("before"), raw.get("before_sensitive")),
        "after": masked(raw.get("after"), raw.get("after_sensitive")),
    }
    types = ", ".join(dict.fromkeys(p["type"] for p in provisioners))
    noun = "provisioner" if len(provisioners) == 1 else "provisioners"
    return CodeRun(
        key=f"run provisioners of {label}",
        what=f"{types} {noun} of {label} ({phase})",
        digest=digest({**facts, "provisioners": provisioners}),
    )


def config_address(address: str) -> str:
    """An instance's address without its instance keys: `module.a["k"].terraform_data.x[0]` →
    `module.a.terraform_data.x`, the resource of the configuration it comes from."""
    if "[" not in address:
        return address
    stripped = _INSTANCE_KEY.sub("", address)
    if "[" in stripped or "]" in stripped:
        raise PlanError(f"resource address {address!r} has an unterminated instance key")
    return stripped


def configured_resources(configuration: Any) -> dict[str, dict[str, Any]]:
    """Every resource of the configuration, root and module calls alike, by its absolute address
    (`module.a.module.b.terraform_data.x`, `data.external.e`); PlanError when the shape is wrong."""
    config = _object(configuration, "configuration")
    found: dict[str, dict[str, Any]] = {}
    root = config.get("root_module")
    if root is not None:
        _walk(_object(root, "configuration.root_module"), "", "configuration.root_module", found)
    return found


def _walk(module: dict[str, Any], prefix: str, where: str, found: dict[str, dict[str, Any]]) -> None:
    resources = module.get("resources", [])
    if not isinstance(resources, list):
        raise PlanError(f"{where}.resources must be a list")
    for i, entry in enumerate(resources):
        resource = _resource(entry, f"{where}.resources[{i}]")
        mode = "data." if resource["mode"] == "data" else ""
        found[f"{prefix}{mode}{resource['type']}.{resource['name']}"] = resource
    calls = _object(module.get("module_calls", {}), f"{where}.module_calls")
    for name, call in calls.items():
        call_where = f"{where}.module_calls.{name}"
        inner = _object(call, call_where).get("module")
        if inner is not None:
            _walk(_object(inner, f"{call_where}.module"), f"{prefix}module.{name}.", f"{call_where}.module", found)


def _resource(entry: Any, where: str) -> dict[str, Any]:
    resource = _object(entry, where)
    for key in ("mode", "type", "name"):
        if not isinstance(resource.get(key), str) or not resource[key]:
            raise PlanError(f"{where}.{key} must be a non-empty string")
    provisioners = resource.get("provisioners")
    if provisioners is not None:
        if not isinstance(provisioners, list):
            raise PlanError(f"{where}.provisioners must be a list")
        for i, provisioner in enumerate(provisioners):
            if not isinstance(_object(provisioner, f"{where}.provisioners[{i}]").get("type"), str):
                raise PlanError(f"{where}.provisioners[{i}].type must be a string")
    return resource


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PlanError(f"{where} must be an object")
    return value
