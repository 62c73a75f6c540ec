"""core.destroy_rules and their config: two-person rules, narrowed approvers, destroys nothing unlocks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.approvals import Approval
from core.config import ConfigError, DestroyRule, parse_config
from core.destroy_rules import explain, matches, names, needs, resource_type, satisfied_pairs, unkeyed
from core.gated import Gated

SHA = "a" * 40
P = "infra@default:infra"
DB, BUCKET, WEB = "aws_db_instance.main", "aws_s3_bucket.tfstate", "aws_instance.web"
RULES = (
    DestroyRule(match=("aws_db_instance.*", "module.prod.*"), approvals=2, teams=("acme/dba",)),
    DestroyRule(match=("aws_s3_bucket.tfstate",), never=True),
    DestroyRule(match=("type:aws_kms_key",), approvals=2),
)


def _ok(*logins: str, keys: tuple[str, ...] = (DB, WEB)) -> list[Approval]:
    return [Approval(login, SHA, frozenset((P, k, "o") for k in keys)) for login in logins]


def _g(*keys: str) -> dict[str, dict[str, Gated]]:
    return {P: {k: Gated(k, "o") for k in keys}}


def _d(address: str, previous: str | None = None) -> Gated:
    return Gated(address, "o", previous)


def test_resource_types_and_globs() -> None:
    assert resource_type('module.a.module.b.aws_s3_bucket.x["k"] (deposed 00ab)') == "aws_s3_bucket"
    assert resource_type("aws_instance.web[0]") == "aws_instance"
    assert resource_type("data.aws_ami.x") is None
    assert matches(RULES[0], _d('module.prod.aws_instance.x["a"]')) and matches(RULES[0], _d("aws_db_instance.main"))
    assert not matches(RULES[0], _d("module.staging.aws_db_instance.main"))  # anchored: not inside another module
    assert matches(RULES[2], _d("module.x.aws_kms_key.k")) and not matches(RULES[2], _d("aws_kms_alias.k"))


def test_two_distinct_narrowed_approvers_for_the_database() -> None:
    dba = {"dora": frozenset({0}), "dan": frozenset({0})}
    one = {n.pair[1]: n for n in needs(_g(DB, WEB), _ok("dora"), RULES, dba)}
    assert one[DB].missing == 1 and one[WEB].satisfied
    assert explain(one[DB], RULES) == "destroy_rules[0]: needs 1 more approval"
    twice = needs(_g(DB), [*_ok("dora"), *_ok("DORA")], RULES, dba)
    assert twice[0].missing == 1  # the same person twice is one approval
    outsider = needs(_g(DB), _ok("dora", "bob"), RULES, dba)
    assert outsider[0].missing == 1  # bob may approve destroys, but is not in acme/dba
    both = needs(_g(DB), _ok("dora", "dan"), RULES, dba)
    assert both[0].satisfied and explain(both[0], RULES) == "destroy_rules[0]: approved"


def test_never_is_never() -> None:
    (need,) = needs(_g(BUCKET), _ok("a", "b", "c", keys=(BUCKET,)), RULES, {})
    assert need.never and not need.satisfied
    assert "never" in explain(need, RULES)
    assert satisfied_pairs([need]) == frozenset()


def test_unmatched_destroys_need_one_approval() -> None:
    assert needs(_g(WEB), [], RULES, {})[0].missing == 1
    assert needs(_g(WEB), _ok("bob"), RULES, {})[0].satisfied


@given(st.lists(st.sampled_from(["a", "b", "c", "A"]), max_size=6), st.integers(1, 4))
def test_a_rule_is_met_exactly_when_enough_distinct_people_approved(logins: list[str], n: int) -> None:
    rules = (DestroyRule(match=("*",), approvals=n),)
    (need,) = needs(_g(WEB), _ok(*logins, keys=(WEB,)), rules, {})
    assert need.satisfied == (len({x.casefold() for x in logins}) >= n)


def test_rules_in_config_and_their_errors_name_the_key() -> None:
    text = """version: 1
destroy_rules:
  - match: ["aws_db_instance.*", "module.prod.*"]
    approvals: 2
    approvers: {teams: [acme/dba]}
  - match: ["aws_s3_bucket.tfstate"]
    never: true
"""
    rules = parse_config(text).destroy_rules
    assert rules[0] == RULES[0] and rules[1] == RULES[1]
    for bad, key in (
        ("destroy_rules: [{approvals: 2}]", "destroy_rules[0].match"),
        ("destroy_rules: [{match: []}]", "destroy_rules[0].match"),
        ("destroy_rules: [{match: [x], approvals: 0}]", "destroy_rules[0].approvals"),
        ("destroy_rules: [{match: [x], never: true, approvals: 2}]", "destroy_rules[0].never"),
        ("destroy_rules: [{match: [x], aprovals: 2}]", "destroy_rules[0].aprovals"),
        ("destroy_rules: [{match: [x], approvers: {teams: [nope]}}]", "destroy_rules[0].approvers.teams[0]"),
        ("destroy_rules: {match: [x]}", "destroy_rules"),
    ):
        with pytest.raises(ConfigError) as err:
            parse_config(f"version: 1\n{bad}\n")
        assert err.value.key == key


@pytest.mark.parametrize(
    ("address", "bare"),
    [
        ("aws_s3_bucket.x", "aws_s3_bucket.x"),
        ("aws_s3_bucket.x[0]", "aws_s3_bucket.x"),
        ('aws_s3_bucket.x["a.b"]', "aws_s3_bucket.x"),
        ('aws_s3_bucket.x["a]b"]', "aws_s3_bucket.x"),
        ('aws_s3_bucket.x["quote \\" ] inside"]', "aws_s3_bucket.x"),
        ('module.m["k"].module.n[2].aws_s3_bucket.x["a"]', "module.m.module.n.aws_s3_bucket.x"),
    ],
)
def test_instance_keys_come_off_whatever_they_hold(address: str, bare: str) -> None:
    assert unkeyed(address) == bare


NEVER_STATE = (DestroyRule(match=("terraform_data.state",), never=True),)


@pytest.mark.parametrize(
    ("gated", "why"),
    [
        (_d("terraform_data.state"), "its own name"),
        (_d("terraform_data.state[0]", "terraform_data.state"), "count = 0 added: moved to [0], then deleted"),
        (_d('terraform_data.state["a"]'), "for_each added: the old instance keys"),
        (_d("terraform_data.renamed", "terraform_data.state"), "a moved block, then removed"),
        (_d('module.m["k"].terraform_data.state'), "not: inside a module is another name"),
        (_d("terraform_data.state (deposed 00ab)"), "a deposed object of it"),
    ],
)
def test_a_rule_sees_every_name_an_object_has(gated: Gated, why: str) -> None:
    """A rule on the old name holds however the change renamed the object first."""
    assert matches(NEVER_STATE[0], gated) == (not why.startswith("not:")), why
    (need,) = needs({P: {gated.key: gated}}, [], NEVER_STATE, {})
    assert need.never == (not why.startswith("not:"))


def test_type_rules_and_globs_see_the_previous_name_too() -> None:
    moved = _d("aws_kms_key.new", "module.old.aws_kms_key.k")
    assert names(moved) == ("aws_kms_key.new", "module.old.aws_kms_key.k")
    assert matches(DestroyRule(match=("module.old.*",)), moved)
    assert matches(RULES[2], moved)
    assert matches(DestroyRule(match=("module.prod.*",)), _d('module.prod["eu"].aws_instance.x'))


def test_code_that_runs_at_apply_is_not_a_destroy_for_the_rules() -> None:
    run = Gated("run local-exec provisioner of terraform_data.state", "o")
    assert not matches(DestroyRule(match=("*",), never=True), run)
    (need,) = needs({P: {run.key: run}}, [], (DestroyRule(match=("*",), never=True),), {})
    assert not need.never and need.missing == 1
