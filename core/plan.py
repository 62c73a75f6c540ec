"""Terraform/OpenTofu `show -json` plan → classified changes (pure: data in, data out).

A destroy is any managed change whose `actions` holds `delete` (plain delete, either replace
order, a deposed object) or whose `actions` this code does not know: unknown fails closed.
`forget` (`removed { lifecycle { destroy = false } }`) drops the object from state but leaves it
alive, so it is its own class and never a destroy. Drift and output changes never are either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from core.drift_diff import AttributeChange, attribute_changes
from core.plan_code import CodeRun as CodeRun
from core.plan_code import code_runs
from core.plan_json import PlanError as PlanError
from core.plan_json import any_marked, change_digest, digest, load_document, masked, sensitive_of
from core.plan_lean import LeanChange, LeanEntry, LeanPlan, read_lean

# Action classes a resource change is sorted into. "unknown" fails closed: it counts as a destroy.
ACTION_CLASSES = ("create", "update", "delete", "replace", "read", "no-op", "forget", "unknown")

# Every `actions` list Terraform/OpenTofu write (jsonplan/plan.go). `["create","forget"]` is
# Terraform's replace that forgets the old object; `["forget","create"]` is OpenTofu's: the old
# object survives outside state, so neither is a destroy.
KNOWN_ACTIONS: dict[tuple[str, ...], str] = {
    ("no-op",): "no-op",
    ("create",): "create",
    ("read",): "read",
    ("update",): "update",
    ("delete",): "delete",
    ("delete", "create"): "replace",
    ("create", "delete"): "replace",
    ("forget",): "forget",
    ("create", "forget"): "forget",
    ("forget", "create"): "forget",
}

# Major `format_version`s this parser understands; a new major may change meanings, so it is refused.
KNOWN_MAJOR_VERSIONS = frozenset({"0", "1"})

Document = LeanPlan | dict[str, Any]  # the plan read lean, or whole

# A state's `show -json` also has `format_version`; only a plan has one of these.
_PLAN_KEYS = frozenset({"resource_changes", "planned_values", "resource_drift", "output_changes", "errored"})


@dataclass(frozen=True)
class ResourceChange:
    """One entry of `resource_changes` (or `resource_drift`), classified."""

    address: str
    mode: str  # "managed" | "data"
    type: str
    actions: tuple[str, ...]
    action_class: str  # one of ACTION_CLASSES
    reason: str | None = None  # action_reason, a display label only
    deposed: str | None = None  # deposed object key, when the change targets one
    previous_address: str | None = None  # set when a `moved` block changed the address
    importing: bool = False
    replace_paths: tuple[str, ...] = ()
    sensitive_values: tuple[str, ...] = field(default=(), compare=False)  # plain values to mask
    object_digest: str = ""  # the real object acted on (object_digest()): what an approval is bound to
    change_digest: str = ""  # a create, update or read: what it would do (change_digest()), for change_rules
    # For an update: the attributes that change (core/drift_diff.py, secrets hidden), in `resource_drift`
    # always, in `resource_changes` when asked for (parse_plan); a deleted or created object is only named
    attributes: tuple[AttributeChange, ...] = field(default=(), compare=False)

    @property
    def is_destroy(self) -> bool:
        """A non-data object is deleted (delete, replace, deposed delete); unknown actions in any mode."""
        if self.action_class == "unknown":
            return True
        return self.mode != "data" and self.action_class in ("delete", "replace")

    @property
    def is_moved(self) -> bool:
        return self.previous_address is not None and self.previous_address != self.address

    @property
    def rule_action(self) -> str:
        """The action change rules see: the class, except that a replacement forgetting the old object
        (`["create","forget"]`, `["forget","create"]`) still creates one, so it is a create."""
        return "create" if _forget_creates(self) else self.action_class


@dataclass(frozen=True)
class OutputChange:
    name: str
    actions: tuple[str, ...]
    sensitive: bool
    sensitive_values: tuple[str, ...] = field(default=(), compare=False)


@dataclass(frozen=True)
class Plan:
    """A whole plan, classified. Unreadable input never becomes a Plan: parse_plan raises PlanError."""

    format_version: str
    terraform_version: str
    changes: tuple[ResourceChange, ...]
    drift: tuple[ResourceChange, ...]
    outputs: tuple[OutputChange, ...]
    errored: bool
    applyable: bool | None
    complete: bool | None
    unknown_actions: tuple[str, ...] = ()  # `actions` lists (JSON text) this code does not know
    code_runs: tuple[CodeRun, ...] = ()  # code an apply would run beyond the changes (core/plan_code.py)

    @property
    def destroys(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.is_destroy)

    @property
    def counts(self) -> dict[str, int]:
        """Terraform's summary counts: a replace is one add and one destroy; unknown counts as destroy."""
        managed = [c for c in self.changes if c.mode == "managed"]
        return {
            "add": sum(1 for c in managed if c.action_class in ("create", "replace") or _forget_creates(c)),
            "change": sum(1 for c in managed if c.action_class == "update"),
            "destroy": len(self.destroys),
            "import": sum(1 for c in managed if c.importing),
            "forget": sum(1 for c in managed if c.action_class == "forget"),
        }

    @property
    def has_changes(self) -> bool:
        """Something would happen on apply: a resource action, a move, an import or an output change."""
        return (
            any(self.counts.values())
            or any(c.is_moved for c in self.changes)
            or any(o.actions != ("no-op",) for o in self.outputs)
        )

    @property
    def sensitive_values(self) -> tuple[str, ...]:
        """Every plain value marked sensitive anywhere in the plan, longest first (mask order)."""
        found = {v for c in (*self.changes, *self.drift) for v in c.sensitive_values}
        found.update(v for o in self.outputs for v in o.sensitive_values)
        return tuple(sorted(found, key=lambda v: (-len(v), v)))


def _forget_creates(change: ResourceChange) -> bool:
    return change.action_class == "forget" and "create" in change.actions


def summary_line(plan: Plan) -> str:
    """Terraform's own summary phrasing; ", N to forget" only when N > 0, as OpenTofu prints it."""
    if not plan.has_changes:
        return "Planning failed." if plan.errored else "No changes."
    n = plan.counts
    line = f"{n['add']} to add, {n['change']} to change, {n['destroy']} to destroy"
    if n["import"]:
        line = f"{n['import']} to import, {line}"
    if n["forget"]:
        line += f", {n['forget']} to forget"
    return f"Plan: {line}."


def parse_plan(data: bytes | str, *, attributes: bool = False) -> Plan:
    """Read `terraform show -json` / `tofu show -json` output; raise PlanError when it cannot be trusted.
    Read lean (core/plan_lean.py) when it can be, else as one whole document: the same Plan either way.
    Drifted updates always carry their changed attributes; `attributes`: planned updates too (a drift
    check shows what a plan would change, attribute by attribute; a PR's plan does not)."""
    lean = read_lean(data)
    doc = lean if lean is not None else load_document(data)
    version = doc.get("format_version", doc.get("plan_format_version"))
    if not isinstance(version, str) or not version:
        raise PlanError("no format_version: this is not `terraform show -json` output")
    if version.split(".", 1)[0] not in KNOWN_MAJOR_VERSIONS:
        raise PlanError(f"unsupported plan format_version {version!r}: this plangate reads 0.x and 1.x")
    if not any(key in doc for key in _PLAN_KEYS):
        raise PlanError("this JSON has no planned changes: is it a state file instead of a saved plan?")
    entries = _list(doc, "resource_changes")
    changes = tuple(_change(e, f"resource_changes[{i}]", diff=attributes) for i, e in enumerate(entries))
    drift = tuple(_change(e, f"resource_drift[{i}]", diff=True) for i, e in enumerate(_list(doc, "resource_drift")))
    unknown = dict.fromkeys(json.dumps(list(c.actions)) for c in changes if c.action_class == "unknown")
    terraform_version = doc.get("terraform_version")
    return Plan(
        format_version=version,
        terraform_version=terraform_version if isinstance(terraform_version, str) else "",
        changes=changes,
        drift=drift,
        outputs=_outputs(doc.get("output_changes")),
        errored=_flag(doc, "errored") is True,
        applyable=_flag(doc, "applyable"),
        complete=_flag(doc, "complete"),
        unknown_actions=tuple(unknown),
        code_runs=code_runs(
            doc.get("configuration"), [(c, e.get("change")) for c, e in zip(changes, entries, strict=True)]
        ),
    )


def _list(doc: Document, key: str) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise PlanError(f"{key} must be a list")
    return value


def _flag(doc: Document, key: str) -> bool | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, bool):
        raise PlanError(f"{key} must be true or false, not {value!r}")
    return value


def _optional_str(entry: dict[str, Any] | LeanEntry, key: str, where: str) -> str | None:
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise PlanError(f"{where}.{key} must be a string")
    return value


def _change_object(change: Any, where: str) -> tuple[dict[str, Any] | LeanChange, tuple[str, ...]]:
    """A change object and its actions, which must be a list of strings (values are classified later)."""
    if not isinstance(change, dict | LeanChange):
        raise PlanError(f"{where} must be an object with actions")
    actions = change.get("actions")
    if not isinstance(actions, list) or not all(isinstance(a, str) for a in actions):
        raise PlanError(f"{where}.actions must be a list of strings")
    return change, tuple(actions)


def _change(entry: Any, where: str, *, diff: bool = False) -> ResourceChange:
    """One entry, classified; `diff`: with its changed attributes when it is an update (a PR's plan never
    shows them, and decoding every change's `after` would cost a large plan's parse dearly)."""
    if not isinstance(entry, dict | LeanEntry):
        raise PlanError(f"{where} must be an object")
    address = entry.get("address")
    if not isinstance(address, str) or not address:
        raise PlanError(f"{where}.address must be a non-empty string")
    change, actions = _change_object(entry.get("change"), f"{where}.change")
    values = _values(change)
    mode = entry.get("mode")
    rtype = entry.get("type")
    return ResourceChange(
        address=address,
        mode=mode if isinstance(mode, str) else "managed",
        type=rtype if isinstance(rtype, str) else "",
        actions=actions,
        action_class=KNOWN_ACTIONS.get(actions, "unknown"),
        reason=_optional_str(entry, "action_reason", where),
        deposed=_optional_str(entry, "deposed", where) or None,
        previous_address=_optional_str(entry, "previous_address", where),
        importing=change.get("importing") is not None,
        replace_paths=_replace_paths(change.get("replace_paths"), where),
        sensitive_values=sensitive_of(values),
        object_digest=object_digest(entry.get("provider_name"), rtype, values),
        change_digest=change_digest(entry.get("provider_name"), rtype, actions, change, values)
        if KNOWN_ACTIONS.get(actions) in ("create", "update", "read")
        or (KNOWN_ACTIONS.get(actions) == "forget" and "create" in actions)
        else "",
        attributes=attribute_changes(change) if diff and KNOWN_ACTIONS.get(actions) == "update" else (),
    )


def _replace_paths(paths: Any, where: str) -> tuple[str, ...]:
    if paths is not None and not isinstance(paths, list):
        raise PlanError(f"{where}.change.replace_paths must be a list")
    return tuple(_path_text(p) for p in paths or () if isinstance(p, list))


def _values(change: dict[str, Any] | LeanChange) -> dict[str, Any]:
    """What a change is classified by, each value decoded once; `after` only when something in it is
    sensitive (its masked values are its one use here: the code runs read it on their own)."""
    values = {key: change.get(key) for key in ("before", "before_sensitive", "after_sensitive", "before_identity")}
    if any_marked(values["after_sensitive"]):
        values["after"] = change.get("after")
    return values


def object_digest(provider: Any, rtype: Any, change: dict[str, Any]) -> str:
    """32 hex naming the object a change acts on: its provider, type, `before` (sensitive values masked:
    the digest is published) and `before_identity` when terraform writes one. Equal for the same object
    planned twice; another `id`, account or region in it gives another digest. For a deposed object,
    `before` is that object's."""
    facts = {
        "provider_name": provider,
        "type": rtype,
        "before": masked(change.get("before"), change.get("before_sensitive")),
    }
    if change.get("before_identity") is not None:
        facts["before_identity"] = change["before_identity"]
    return digest(facts)


def _path_text(path: list[Any]) -> str:
    """["network_interface", 0, "id"] → network_interface[0].id (a label, not an address)."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def _outputs(raw: Any) -> tuple[OutputChange, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, dict):
        raise PlanError("output_changes must be an object")
    outputs = []
    for name, raw_change in raw.items():
        change, actions = _change_object(raw_change, f"output_changes.{name}")
        sensitive = any_marked(change.get("before_sensitive")) or any_marked(change.get("after_sensitive"))
        outputs.append(OutputChange(name, actions, sensitive, sensitive_of(change)))
    return tuple(outputs)
