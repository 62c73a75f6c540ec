"""Every attribute of any change as a run page draws it (core.drift_diff.attributes_of): creates, deletes,
replacements and updates, secrets never shown, unknown values marked, what forces a replacement flagged."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from core.drift_diff import SENSITIVE, UNKNOWN, _join, attributes_of
from core.runs import Attribute


def drawn(change: dict[str, Any], replace: list[list[Any]] | None = None) -> list[tuple[Any, ...]]:
    found = attributes_of(change, replace or [])
    return [(a.path, a.before, a.after) + (("forces",) if a.forces_replacement else ()) for a in found]


def test_a_create_shows_every_known_value_and_what_is_known_only_after_apply() -> None:
    change = {
        "actions": ["create"],
        "before": None,
        "after": {"input": {"name": "web", "ports": [80, 443], "tags": {}}, "triggers_replace": None},
        "after_unknown": {"id": True, "input": {"ports": [False, False], "tags": {}}, "output": True},
        "before_sensitive": False,
        "after_sensitive": {"input": {"ports": [False, False], "tags": {}}, "output": {}},
    }
    assert drawn(change) == [
        ("input.name", None, '"web"'),
        ("input.ports[0]", None, "80"),
        ("input.ports[1]", None, "443"),
        ("input.tags", None, "{}"),
        ("id", None, UNKNOWN),
        ("output", None, UNKNOWN),
    ]  # a null attribute (triggers_replace) is left out, as terraform leaves it out


def test_a_delete_shows_what_goes() -> None:
    change = {
        "actions": ["delete"],
        "before": {"id": "i-1", "input": None, "tags": {"env": "prod"}, "pw": "hunter22"},
        "after": None,
        "before_sensitive": {"pw": True},
        "after_sensitive": False,
        "after_unknown": {},
    }
    assert drawn(change) == [("id", '"i-1"', None), ("tags.env", '"prod"', None), ("pw", SENSITIVE, None)]


def test_an_update_shows_the_changed_leaves_and_a_missing_side_as_none() -> None:
    change = {
        "actions": ["update"],
        "before": {"id": "x", "tags": {"a": "1", "keep": "k"}},
        "after": {"id": "x", "tags": {"b": "2", "keep": "k"}, "arn": None},
        "after_unknown": {"arn": True},
    }
    assert drawn(change) == [("tags.a", '"1"', None), ("tags.b", None, '"2"'), ("arn", None, UNKNOWN)]


def test_a_replace_marks_what_forces_it_even_when_that_did_not_change() -> None:
    change = {
        "actions": ["delete", "create"],
        "before": {"ami": "bar", "id": "placeholder", "zone": "a", "size": 1},
        "after": {"ami": "force-replace", "zone": "a", "size": 2},
        "after_unknown": {"id": True},
    }
    assert drawn(change, [["ami"], ["zone"]]) == [
        ("ami", '"bar"', '"force-replace"', "forces"),
        ("id", '"placeholder"', UNKNOWN),
        ("zone", '"a"', '"a"', "forces"),
        ("size", "1", "2"),
    ]


def test_a_replace_path_into_a_list_or_beneath_a_secret_marks_the_entry_that_holds_it() -> None:
    change = {
        "before": {"list": [{"id": "A"}, {"id": "B"}], "cfg": {"k": "old-secret"}},
        "after": {"list": [{"id": "A"}, {"id": "C"}], "cfg": {"k": "new-secret"}},
        "before_sensitive": {"cfg": True},
        "after_sensitive": {"cfg": True},
    }
    assert drawn(change, [["list", 1, "id"], ["cfg", "k"]]) == [
        ("list[1].id", '"B"', '"C"', "forces"),
        ("cfg", SENSITIVE, SENSITIVE, "forces"),
    ]
    # a path of a step of another type (the string "1", not the index 1) names nothing here
    assert drawn(change, [["list", "1", "id"]])[0] == ("list[1].id", '"B"', '"C"')


def test_a_secret_known_only_after_apply_reads_as_a_secret() -> None:
    """A generated password: terraform leaves it out of `after`, marks it unknown and sensitive."""
    change = {
        "before": None,
        "after": {"length": 16},
        "after_unknown": {"id": True, "result": True},
        "after_sensitive": {"result": True},
    }
    assert drawn(change) == [("length", None, "16"), ("id", None, UNKNOWN), ("result", None, SENSITIVE)]


def test_a_sensitive_map_is_one_entry_its_keys_unnamed() -> None:
    change = {"before": None, "after": {"env": {"TOKEN_NAME": "abcd1234"}}, "after_sensitive": {"env": True}}
    assert drawn(change) == [("env", None, SENSITIVE)]


def test_an_unknown_block_whose_old_value_holds_a_secret_hides_it() -> None:
    change = {
        "before": {"cfg": {"pin": 4821, "user": "x"}},
        "after": {"cfg": None},
        "before_sensitive": {"cfg": {"pin": True}},
        "after_unknown": {"cfg": True},
    }
    assert drawn(change) == [("cfg", SENSITIVE, UNKNOWN)]


def test_marks_not_shaped_as_their_value_hide_the_whole_value() -> None:
    """Terraform never writes these; whatever did cannot say which parts are secret."""
    shapes: list[Any] = [{"a": {"0": True}}, {"a": [True]}, {"a": [False, True, False]}]
    for marks in shapes:
        change: dict[str, Any] = {"before": None, "after": {"a": ["pw-1234", "pw-5678"]}, "after_sensitive": marks}
        assert drawn(change) == [("a", None, SENSITIVE)], marks
    change = {"before": {"m": {"k": "pw-1234"}}, "after": None, "before_sensitive": {"m": [True]}}
    assert drawn(change) == [("m", SENSITIVE, None)]
    fitting = {"before": None, "after": {"a": ["x", "pw-1234"]}, "after_sensitive": {"a": [False, True]}}
    assert drawn(fitting) == [("a[0]", None, '"x"'), ("a[1]", None, SENSITIVE)]


def test_values_are_kept_whole() -> None:
    ((_, before, after),) = drawn({"before": {"policy": "x" * 50_000}, "after": {"policy": "y"}})
    assert before == json.dumps("x" * 50_000) and after == '"y"'


# Random objects: plain values (which never spell SECRET) and sensitive subtrees holding only secrets,
# keys and numbers too; after-side leaves may be unknown.
_PLAIN = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["a", "b", "x.y", "", "a b"]))
_KEYS = st.sampled_from(["a", "b", "tags", "env", "k.1", "id"])


class _Secrets:
    def __init__(self) -> None:
        self.values: list[str] = []

    def new(self, number: bool = False) -> str | int:
        n = len(self.values)
        if number:
            self.values.append(str(70_000 + n))
            return 70_000 + n
        self.values.append(f"SECRET{n}x")
        return self.values[-1]


@st.composite
def _secret_value(draw: st.DrawFn, secrets: _Secrets) -> Any:
    kind = draw(st.sampled_from(["string", "number", "map", "list"]))
    if kind in ("string", "number"):
        return secrets.new(number=kind == "number")
    if kind == "map":
        return {str(secrets.new()): secrets.new() for _ in range(draw(st.integers(0, 2)))}
    return [secrets.new() for _ in range(draw(st.integers(0, 2)))]


@st.composite
def _tree(draw: st.DrawFn, secrets: _Secrets, unknowns: bool, depth: int = 0) -> tuple[Any, Any, Any]:
    """(value, sensitive marks, unknown marks) of one random object."""
    if draw(st.integers(0, 5)) == 0:
        return draw(_secret_value(secrets)), True, False
    kind = draw(st.sampled_from(["leaf", "map", "list"])) if depth < 3 else "leaf"
    if kind == "leaf":
        if unknowns and draw(st.integers(0, 5)) == 0:
            return None, False, True
        return draw(_PLAIN), False, False
    if kind == "map":
        keys = draw(st.lists(_KEYS, max_size=3, unique=True))
        parts = {k: draw(_tree(secrets, unknowns, depth + 1)) for k in keys}
        return (
            {k: v for k, (v, _, _) in parts.items()},
            {k: m for k, (_, m, _) in parts.items() if m is not False},
            {k: u for k, (_, _, u) in parts.items() if u is not False},
        )
    items = [draw(_tree(secrets, unknowns, depth + 1)) for _ in range(draw(st.integers(0, 3)))]
    return [v for v, _, _ in items], [m for _, m, _ in items], [u for _, _, u in items]


@st.composite
def changes(draw: st.DrawFn) -> tuple[str, dict[str, Any], list[list[Any]], list[str]]:
    """(action, change object, replace paths, secrets) of a random create, delete, update or replace."""
    secrets = _Secrets()
    action = draw(st.sampled_from(["create", "delete", "update", "replace"]))
    keys = draw(st.lists(_KEYS, min_size=1, max_size=4, unique=True))
    before = {k: draw(_tree(secrets, False)) for k in keys}
    after = {k: draw(_tree(secrets, True)) for k in keys}
    change: dict[str, Any] = {
        "before": {k: v for k, (v, _, _) in before.items()},
        "after": {k: v for k, (v, _, _) in after.items()},
        "before_sensitive": {k: m for k, (_, m, _) in before.items() if m is not False},
        "after_sensitive": {k: m for k, (_, m, _) in after.items() if m is not False},
        "after_unknown": {k: u for k, (_, _, u) in after.items() if u is not False},
    }
    if draw(st.booleans()):  # an attribute known only after apply that the config does not set (an id)
        change["after_unknown"]["computed_id"] = True
    if action == "create":
        change.update(before=None, before_sensitive=False)
    elif action == "delete":
        change.update(after=None, after_sensitive=False, after_unknown={})
    paths: list[list[Any]] = []
    if action == "replace":
        leaves = sorted(_paths(change["after"]), key=json.dumps)
        paths = [list(p) for p in draw(st.lists(st.sampled_from(leaves), max_size=2, unique=True))] if leaves else []
    return action, change, paths, secrets.values


def _paths(value: Any, path: tuple[Any, ...] = ()) -> set[tuple[Any, ...]]:
    """Every path into `value`, containers and leaves."""
    found = {path} if path else set()
    if isinstance(value, dict):
        for key, sub in value.items():
            found |= _paths(sub, (*path, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            found |= _paths(sub, (*path, i))
    return found


def _spelled(steps: Any) -> str:
    text = ""
    for step in steps:
        text = f"{text}[{step}]" if isinstance(step, int) else _join(text, step)
    return text


def _related(entry: str, path: str) -> bool:
    """One path lies at, inside or above the other."""
    return entry == path or path.startswith((entry + ".", entry + "[")) or entry.startswith((path + ".", path + "["))


def _unknown_leaves(marks: Any, sides: tuple[Any, Any], path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths `marks` marks (unknown, or sensitive) that no sensitive mark of either side covers."""
    if True in sides:
        return []
    if marks is True:
        return [path]
    steps = marks.items() if isinstance(marks, dict) else enumerate(marks) if isinstance(marks, list) else ()
    return [p for k, m in steps for p in _unknown_leaves(m, (_mark(sides[0], k), _mark(sides[1], k)), (*path, k))]


def _mark(marks: Any, key: Any) -> Any:
    if isinstance(marks, dict):
        return marks.get(key)
    if isinstance(marks, list) and isinstance(key, int) and key < len(marks):
        return marks[key]
    return None


def _must_show(value: Any, sens: Any, unknown: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """What a created (or deleted) object must show: each secret, unknown value, empty map or list and
    non-null leaf."""
    if sens is True or unknown is True:
        return [path]
    if isinstance(value, dict) and (value or (isinstance(unknown, dict) and unknown)):
        keys = dict.fromkeys([*value, *(unknown if isinstance(unknown, dict) else {})])
        parts: Iterable[tuple[Any, Any]] = [(k, value.get(k)) for k in keys]
    elif isinstance(value, list) and value:
        parts = enumerate(value)
    else:
        return [] if value is None else [path]
    return [p for k, v in parts for p in _must_show(v, _mark(sens, k), _mark(unknown, k), (*path, k))]


@settings(max_examples=400, deadline=None)
@given(case=changes())
def test_any_change_never_shows_a_secret_and_marks_what_terraform_marks(
    case: tuple[str, dict[str, Any], list[list[Any]], list[str]],
) -> None:
    action, change, replace, secrets = case
    found = attributes_of(change, replace)
    texts = [t for a in found for t in (a.path, a.before, a.after) if t is not None]
    assert not [s for s in secrets for t in texts if s in t], (found, secrets)
    paths = [a.path for a in found]
    assert len(paths) == len(set(paths))
    assert not [(p, q) for p in paths for q in paths if p != q and _related(p, q)], paths
    if action in ("create", "delete"):
        side = "after" if action == "create" else "before"
        assert all(getattr(a, "before" if action == "create" else "after") is None for a in found)
        unknown = change["after_unknown"] if action == "create" else None
        for steps in _must_show(change[side], change[f"{side}_sensitive"], unknown):
            assert [a for a in found if _related(a.path, _spelled(steps))], (steps, found)
    sides = (change["before_sensitive"], change["after_sensitive"])
    secret = [_spelled(p) for side in sides for p in _unknown_leaves(side, (None, None))]  # marked sensitive
    for steps in _unknown_leaves(change["after_unknown"], sides):
        # shown unknown; or within a value of a new shape that holds a secret, hidden whole
        assert [
            a
            for a in found
            if _related(a.path, _spelled(steps))
            and (a.after == UNKNOWN or (a.after == SENSITIVE and [p for p in secret if _related(a.path, p)]))
        ], (steps, found)
    for forcing in replace:
        assert [a for a in found if a.forces_replacement and _related(a.path, _spelled(forcing))], (forcing, found)
    for a in found:
        assert a.forces_replacement == any(_related(a.path, _spelled(p)) for p in replace), (a, replace)


def test_an_attribute_is_run_page_data() -> None:
    """What the walk yields is core.runs' own record, loaded back as written (forces_replacement defaults
    to False, so records written before it existed still load)."""
    (attribute,) = attributes_of({"before": None, "after": {"a": 1}})
    assert attribute == Attribute("a", None, "1") and attribute.forces_replacement is False
