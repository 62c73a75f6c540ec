"""A plan's JSON read lean (pure): only what plangate reads is built, and each change's values only when used.

Built whole, a plan's JSON takes many times its size in Python objects, most of it
for what plangate never reads (`planned_values`, `prior_state`, `relevant_attributes`, each
configuration's `expressions`) or reads once per change (`before`, `after`). So the document is decoded
by msgspec into Structs that declare only the keys plangate reads, with every value of a change kept
as a `Raw` slice of the input (no copy) and decoded, exactly as core.plan_json reads a whole document
(orjson, the standard library for what orjson would round or refuse), when it is asked for.

Exact or nothing: what this path cannot read as the whole-document path would (a shape terraform never
writes, a lone surrogate, invalid UTF-8, a constant like NaN, nesting past msgspec's depth) returns None,
and the caller reads the document whole instead, which then answers or refuses it as it always did.
"""

from __future__ import annotations

import codecs
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from core.plan_json import value_of

_CHUNK = 1 << 20  # bytes validated as UTF-8 at a time: the text is never decoded whole
_ABSENT = Raw()


class _Lean(msgspec.Struct, gc=False):
    """A JSON object of which only the declared keys were kept: `get` and `in` answer as a dict's would."""

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self.__struct_fields__:
            return default
        value = getattr(self, key)
        if value is UNSET or (isinstance(value, Raw) and not len(value)):
            return default
        return value_of(memoryview(value)) if isinstance(value, Raw) else value

    def __contains__(self, key: str) -> bool:
        """Present, without decoding it: asking whether `planned_values` is there must not build it."""
        if key not in self.__struct_fields__:
            return False
        value = getattr(self, key)
        return value is not UNSET and not (isinstance(value, Raw) and not len(value))


class LeanChange(_Lean):
    """A `change` object: its actions, and its values undecoded until asked for."""

    actions: Any = UNSET
    importing: Any = UNSET
    replace_paths: Any = UNSET
    before: Raw = _ABSENT
    after: Raw = _ABSENT
    before_sensitive: Raw = _ABSENT
    after_sensitive: Raw = _ABSENT
    after_unknown: Raw = _ABSENT
    before_identity: Raw = _ABSENT


class LeanEntry(_Lean):
    """An entry of `resource_changes` or `resource_drift`."""

    address: Any = UNSET
    mode: Any = UNSET
    type: Any = UNSET
    provider_name: Any = UNSET
    action_reason: Any = UNSET
    deposed: Any = UNSET
    previous_address: Any = UNSET
    change: LeanChange | UnsetType | None = UNSET


class LeanResource(_Lean):
    """A resource of the configuration: what core.plan_code reads (`expressions` of an external program only)."""

    mode: Any = UNSET
    type: Any = UNSET
    name: Any = UNSET
    provisioners: Any = UNSET
    expressions: Raw = _ABSENT


class LeanModule(_Lean):
    resources: list[LeanResource] | UnsetType = UNSET
    module_calls: dict[str, LeanCall] | UnsetType = UNSET


class LeanCall(_Lean):
    module: LeanModule | UnsetType | None = UNSET


class LeanConfiguration(_Lean):
    root_module: LeanModule | UnsetType | None = UNSET


class LeanPlan(_Lean):
    """The top of a plan: `planned_values` only noted as there (it tells a plan from a state)."""

    format_version: Any = UNSET
    plan_format_version: Any = UNSET
    terraform_version: Any = UNSET
    errored: Any = UNSET
    applyable: Any = UNSET
    complete: Any = UNSET
    planned_values: Raw = _ABSENT
    resource_changes: list[LeanEntry] | UnsetType | None = UNSET
    resource_drift: list[LeanEntry] | UnsetType | None = UNSET
    output_changes: dict[str, LeanChange] | UnsetType | None = UNSET
    configuration: LeanConfiguration | UnsetType | None = UNSET

    def get(self, key: str, default: Any = None) -> Any:
        if key == "configuration" and isinstance(self.configuration, LeanConfiguration):
            return _configuration(self.configuration)
        return super().get(key, default)


class _DrawnEntry(msgspec.Struct, gc=False):
    address: Any = UNSET
    change: Raw = _ABSENT


class _DrawnPlan(msgspec.Struct, gc=False):
    resource_changes: list[_DrawnEntry] | UnsetType | None = UNSET


def read_changes(data: bytes | str) -> list[tuple[Any, Raw]] | None:
    """Each entry of `resource_changes` as its address and its `change` undecoded (decode it with
    core.plan_json.value_of): a run page decodes only the changes it draws, each at once. None when only
    the whole-document path can read the plan."""
    buffer = _utf8(data)
    if buffer is None:
        return None
    try:
        plan = msgspec.json.decode(buffer, type=_DrawnPlan)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    entries = plan.resource_changes if isinstance(plan.resource_changes, list) else []
    return [(e.address, e.change) for e in entries]


def read_lean(data: bytes | str) -> LeanPlan | None:
    """The plan in `data`, read lean; None when only the whole-document path can read or refuse it."""
    buffer = _utf8(data)
    if buffer is None:
        return None
    try:
        return msgspec.json.decode(buffer, type=LeanPlan)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def _utf8(data: bytes | str) -> memoryview | str | None:
    """The JSON text as msgspec reads it: a str, or the bytes (their UTF-8 BOM skipped) once they are
    known to be valid UTF-8; None for other encodings (UTF-16, as PowerShell writes) and invalid bytes."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    view = memoryview(data)[len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0 :]
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) or (len(data) >= 2 and 0 in data[:2]):
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for start in range(0, len(view), _CHUNK):
            decoder.decode(view[start : start + _CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return None
    return view


def _configuration(config: LeanConfiguration) -> dict[str, Any]:
    """The configuration as core.plan_code walks it: plain dicts of the keys it reads."""
    out: dict[str, Any] = {}
    if config.root_module is not UNSET:
        out["root_module"] = None if config.root_module is None else _module(config.root_module)
    return out


def _module(module: LeanModule) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if module.resources is not UNSET:
        out["resources"] = [_resource(r) for r in module.resources]
    if module.module_calls is not UNSET:
        out["module_calls"] = {name: _call(call) for name, call in module.module_calls.items()}
    return out


def _call(call: LeanCall) -> dict[str, Any]:
    if call.module is UNSET:
        return {}
    return {"module": None if call.module is None else _module(call.module)}


def _resource(resource: LeanResource) -> dict[str, Any]:
    out = {key: resource.get(key) for key in ("mode", "type", "name", "provisioners") if key in resource}
    if resource.mode == "data" and resource.type == "external" and "expressions" in resource:
        out["expressions"] = resource.get("expressions")  # the program an external data source runs
    return out
