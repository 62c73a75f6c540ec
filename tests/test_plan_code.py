"""core.plan_code: which changes of a plan run code at apply, read from its `configuration` section."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.plan import CodeRun, Plan, PlanError, parse_plan
from core.plan_code import config_address, configured_resources

PLANS = Path(__file__).parent / "fixtures" / "terraform" / "plans"
LOCAL_EXEC = {"type": "local-exec", "expressions": {"command": {"constant_value": "echo hi"}}}


def resource(address: str, *provisioners: dict[str, Any], mode: str = "managed") -> dict[str, Any]:
    """A configuration resource; `address` is relative to its module, as terraform writes it."""
    parts = address.split(".")
    rtype, name = parts[-2], parts[-1]
    entry: dict[str, Any] = {"address": address, "mode": mode, "type": rtype, "name": name}
    if provisioners:
        entry["provisioners"] = list(provisioners)
    return entry


def change(address: str, actions: list[str], mode: str = "managed", **raw: Any) -> dict[str, Any]:
    rtype = address.split(".")[-2].split("[")[0] if mode == "managed" else address.split(".")[-2]
    entry: dict[str, Any] = {"address": address, "mode": mode, "type": rtype}
    if "deposed" in raw:
        entry["deposed"] = raw.pop("deposed")
    return {**entry, "change": {"actions": actions, "before": None, "after": None, **raw}}


def plan(*changes: dict[str, Any], configuration: Any = None, **root: Any) -> Plan:
    doc: dict[str, Any] = {"format_version": "1.2", "resource_changes": list(changes)}
    if configuration is not None:
        doc["configuration"] = configuration
    elif root:
        doc["configuration"] = {"root_module": root}
    return parse_plan(json.dumps(doc))


def runs(*changes: dict[str, Any], **root: Any) -> dict[str, str]:
    return {r.key: r.what for r in plan(*changes, **root).code_runs}


@pytest.mark.parametrize(
    ("actions", "phase"),
    [
        (["create"], "at create"),
        (["delete", "create"], "at replace"),
        (["create", "delete"], "at replace"),
        (["delete"], "at destroy"),
        (["create", "forget"], "at create"),
        (["forget", "create"], "at create"),
        (["delete", "teleport"], "at apply"),
    ],
)
def test_provisioners_run_when_an_object_is_made_or_destroyed(actions: list[str], phase: str) -> None:
    """`when` is not in the JSON: every provisioner counts for create, replace and delete alike."""
    found = runs(change("terraform_data.x", actions), resources=[resource("terraform_data.x", LOCAL_EXEC)])
    assert found == {"run provisioners of terraform_data.x": f"local-exec provisioner of terraform_data.x ({phase})"}


@pytest.mark.parametrize("actions", [["no-op"], ["update"], ["forget"], ["read"]])
def test_no_code_when_the_object_is_neither_made_nor_destroyed(actions: list[str]) -> None:
    assert runs(change("terraform_data.x", actions), resources=[resource("terraform_data.x", LOCAL_EXEC)]) == {}


def test_a_resource_without_provisioners_runs_nothing() -> None:
    assert runs(change("terraform_data.x", ["delete", "create"]), resources=[resource("terraform_data.x")]) == {}


def test_a_destroy_of_an_unconfigured_object_is_gated_as_a_destroy_not_again_as_code() -> None:
    """terraform's JSON never shows `removed` blocks, whose provisioners run only with that destroy:
    the destroy needs its approval already."""
    assert runs(change("terraform_data.gone", ["delete"]), resources=[]) == {}
    assert runs(change("module.old.terraform_data.x[0]", ["delete"])) == {}  # no configuration at all: none known


def test_instances_map_to_their_resource_through_modules() -> None:
    inner = {"resources": [resource("terraform_data.x", LOCAL_EXEC, {"type": "file", "expressions": {}})]}
    calls = {"a": {"source": "./a", "module": {"module_calls": {"b": {"source": "./b", "module": inner}}}}}
    address = 'module.a["k"].module.b[0].terraform_data.x["a.b]\\"c"]'
    found = runs(change(address, ["create"]), module_calls=calls)
    assert found == {f"run provisioners of {address}": f"local-exec, file provisioners of {address} (at create)"}


def test_deposed_objects_have_their_own_key() -> None:
    config = {"resources": [resource("terraform_data.x", LOCAL_EXEC)]}
    found = runs(
        change("terraform_data.x", ["create"]), change("terraform_data.x", ["delete"], deposed="0bad"), **config
    )
    assert set(found) == {"run provisioners of terraform_data.x", "run provisioners of terraform_data.x (deposed 0bad)"}


def test_an_external_data_source_read_at_apply_runs_its_program() -> None:
    program = resource("data.external.e", mode="data") | {"expressions": {"program": {"constant_value": ["sh"]}}}
    found = runs(
        change("data.external.e", ["read"], mode="data"),
        change("data.http.h", ["read"], mode="data"),
        resources=[program, resource("data.http.h", mode="data")],
    )
    assert found == {"run external program of data.external.e": "external program of data.external.e (read at apply)"}
    assert runs(change("data.external.e", ["no-op"], mode="data"), resources=[program]) == {}


def digest_of(*provisioners: dict[str, Any], **raw: Any) -> str:
    (run,) = plan(
        change("terraform_data.x", ["create"], **raw), resources=[resource("terraform_data.x", *provisioners)]
    ).code_runs
    return run.digest


def test_the_digest_covers_what_would_run() -> None:
    base = digest_of(LOCAL_EXEC, after={"input": "a"})
    assert len(base) == 32 and base == digest_of(LOCAL_EXEC, after={"input": "a"})
    other = {"type": "local-exec", "expressions": {"command": {"constant_value": "rm -rf /"}}}
    assert digest_of(other, after={"input": "a"}) != base
    assert digest_of(LOCAL_EXEC, after={"input": "b"}) != base  # a command built from `self.input`
    assert digest_of(LOCAL_EXEC, LOCAL_EXEC, after={"input": "a"}) != base


def test_the_digest_does_not_tell_secrets() -> None:
    one = digest_of(LOCAL_EXEC, after={"password": "hunter2"}, after_sensitive={"password": True})
    assert one == digest_of(LOCAL_EXEC, after={"password": "guess"}, after_sensitive={"password": True})


def test_the_digest_covers_the_instance() -> None:
    config = {"resources": [resource("terraform_data.x", LOCAL_EXEC)]}
    first, second = plan(
        change("terraform_data.x[0]", ["create"]), change("terraform_data.x[1]", ["create"]), **config
    ).code_runs
    assert first.digest != second.digest


@given(
    st.lists(
        st.sampled_from(["terraform_data.a", "terraform_data.b[0]", 'module.m["k"].terraform_data.c']), unique=True
    )
)
def test_keys_start_with_run_and_are_unique(addresses: list[str]) -> None:
    config = {
        "resources": [resource("terraform_data.a", LOCAL_EXEC), resource("terraform_data.b", LOCAL_EXEC)],
        "module_calls": {"m": {"module": {"resources": [resource("terraform_data.c", LOCAL_EXEC)]}}},
    }
    found = plan(*(change(a, ["delete"]) for a in addresses), **config).code_runs
    assert len(found) == len(addresses) == len({r.key for r in found})
    assert all(r.key.startswith("run ") for r in found)


@pytest.mark.parametrize(
    ("address", "resource_address"),
    [
        ("terraform_data.x", "terraform_data.x"),
        ("terraform_data.x[0]", "terraform_data.x"),
        ('module.a["k"].data.external.e[3]', "module.a.data.external.e"),
        ('aws_s3_bucket.b["]"]', "aws_s3_bucket.b"),
        ('aws_s3_bucket.b["\\"]["]', "aws_s3_bucket.b"),
    ],
)
def test_config_address(address: str, resource_address: str) -> None:
    assert config_address(address) == resource_address


@pytest.mark.parametrize("address", ["t.x[0", 't.x["a]', 't.x["a"'])
def test_config_address_refuses_an_unterminated_key(address: str) -> None:
    with pytest.raises(PlanError, match="unterminated"):
        config_address(address)


@pytest.mark.parametrize(
    ("configuration", "where"),
    [
        ([], "configuration must be an object"),
        ({"root_module": []}, "configuration.root_module must be an object"),
        ({"root_module": {"resources": {}}}, "resources must be a list"),
        ({"root_module": {"resources": ["x"]}}, r"resources\[0\] must be an object"),
        ({"root_module": {"resources": [{"mode": "managed", "type": "t"}]}}, "name must be a non-empty string"),
        ({"root_module": {"resources": [{**resource("t.x"), "provisioners": {}}]}}, "provisioners must be a list"),
        ({"root_module": {"resources": [{**resource("t.x"), "provisioners": [{}]}]}}, r"provisioners\[0\].type"),
        ({"root_module": {"module_calls": []}}, "module_calls must be an object"),
        ({"root_module": {"module_calls": {"m": {"module": 1}}}}, "module_calls.m.module must be an object"),
    ],
)
def test_a_malformed_configuration_is_refused_not_read_as_no_code(configuration: Any, where: str) -> None:
    with pytest.raises(PlanError, match=where):
        plan(change("t.x", ["create"]), configuration=configuration)


def test_an_empty_configuration_is_read() -> None:
    assert configured_resources({}) == {} == configured_resources({"root_module": {}})


def test_fixtures_with_provisioners() -> None:
    """terraform-json's basic plan creates null_resource.foo, which has a local-exec provisioner."""
    found = parse_plan((PLANS / "terraform-json/basic.plan.json").read_bytes()).code_runs
    assert found == (
        CodeRun(
            "run provisioners of null_resource.foo",
            "local-exec provisioner of null_resource.foo (at create)",
            found[0].digest,
        ),
    )
    large = parse_plan((PLANS / "checkov/large_55_resources_tf0.12.plan.json").read_bytes()).code_runs
    assert [r.key for r in large] == ["run provisioners of null_resource.push_image"]
    unchanged = parse_plan((PLANS / "terraform-json/no_changes.plan.json").read_bytes())
    assert unchanged.code_runs == ()  # its provisioner resource does not change
