"""The gate's verdict per run and per gated change (core/run_gate.py), and who approved each change
(core.approvals.Coverage.approved_by, as core.destroy_rules.rule_coverage works it out)."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from core.approvals import Approval, Coverage
from core.config import DestroyRule
from core.destroy_rules import rule_coverage
from core.gated import Gated, Gates
from core.run_gate import FAILED_NOTE, run_gates, verdict
from core.runs import VERDICT_STATES
from workers.flows.apply_approvals import Standing

SHA = "abc1234" + "0" * 33
DNS, WEB = "dns@default:dns", "web@default:web"
STATUS = ("failure", "1 to destroy — comment /approve-destroy")


def _obj(key: str, suffix: str = "") -> str:
    return hashlib.sha256((key + suffix).encode()).hexdigest()[:32]


def gated(key: str, suffix: str = "", what: str = "") -> Gated:
    return Gated(key, _obj(key, suffix), what=what)


def approval(who: str, pairs: dict[str, list[str]], suffix: str = "", sha: str = SHA) -> Approval:
    return Approval(who, sha, frozenset((p, k, _obj(k, suffix)) for p, ks in pairs.items() for k in ks))


GATES: Gates = {
    DNS: {
        "aws_route53_record.www": gated("aws_route53_record.www"),
        "aws_db_instance.main": gated("aws_db_instance.main"),
    },
    WEB: {
        "run local-exec x": gated("run local-exec x", what="local-exec provisioner of terraform_data.x (at create)"),
        "update aws_s3_bucket.logs": gated("update aws_s3_bucket.logs"),
        "limit max_destroys": gated("limit max_destroys", what="2 destroys, past max_destroys 1"),
    },
    "net@default:net": {},
}


def test_each_run_carries_the_commits_status_and_only_its_own_changes() -> None:
    cov = rule_coverage(GATES, [approval("bob", {DNS: ["aws_route53_record.www"]})], sha=SHA, rules=(), eligible={})
    runs = run_gates(GATES, cov, STATUS, at=12.5)
    assert set(runs) == {DNS, WEB, "net@default:net"}
    assert {(r.state, r.description, r.at) for r in runs.values()} == {(*STATUS, 12.5)}
    assert [v.key for v in runs[DNS].verdicts] == ["aws_route53_record.www", "aws_db_instance.main"]
    assert [v.kind for v in runs[WEB].verdicts] == ["code", "change", "limit"]
    assert runs["net@default:net"].verdicts == ()
    www, db = runs[DNS].verdicts
    assert (www.state, www.note, www.approvers, www.kind) == ("approved", "approved", ("bob",), "destroy")
    assert (db.state, db.note, db.approvers) == ("waiting", "needs 1 approval", ())
    code = runs[WEB].verdicts[0]
    assert code.note == "local-exec provisioner of terraform_data.x (at create): needs 1 approval"


def test_nothing_gated_gives_empty_verdicts_with_the_status_words() -> None:
    runs = run_gates({DNS: {}}, None, ("success", "No destroys"), at=0.0, identities=(DNS, WEB))
    assert {i: (r.state, r.description, r.verdicts) for i, r in runs.items()} == {
        DNS: ("success", "No destroys", ()),
        WEB: ("success", "No destroys", ()),
    }


def test_a_failed_plan_leaves_every_change_waiting_unjudged() -> None:
    status = ("failure", "Cannot check destroys: 1 plans failed: web")
    runs = run_gates({DNS: GATES[DNS]}, None, status, at=0.0, identities=(WEB,))
    assert runs[WEB].verdicts == () and runs[WEB].state == "failure"
    assert {(v.state, v.note, v.approvers) for v in runs[DNS].verdicts} == {("waiting", FAILED_NOTE, ())}


def test_rules_name_what_each_change_still_needs_and_who_gave_what() -> None:
    rules = (DestroyRule(("aws_db_instance.*",), approvals=2), DestroyRule(("aws_route53_record.*",), never=True))
    gates = {DNS: GATES[DNS]}
    both = [approval("bob", {DNS: ["aws_db_instance.main", "aws_route53_record.www"]})]
    cov = rule_coverage(gates, both, sha=SHA, rules=rules, eligible={})
    www, db = run_gates(gates, cov, STATUS, at=0.0)[DNS].verdicts
    assert (db.state, db.note, db.approvers) == ("waiting", "destroy_rules[0]: needs 1 more approval", ("bob",))
    assert (www.state, www.note) == ("never", "destroy_rules[1]: never — no approval can unlock it")
    assert www.approvers == ("bob",)  # given, and counting for nothing: the note says so
    two = [*both, approval("carol", {DNS: ["aws_db_instance.main"]})]
    cov = rule_coverage(gates, two, sha=SHA, rules=rules, eligible={})
    _, db = run_gates(gates, cov, STATUS, at=0.0)[DNS].verdicts
    assert (db.state, db.note, db.approvers) == ("approved", "destroy_rules[0]: approved", ("bob", "carol"))


def test_an_approval_of_another_object_is_voided_and_lists_nobody() -> None:
    gates = {DNS: {"aws_db_instance.main": gated("aws_db_instance.main")}}
    old = approval("bob", {DNS: ["aws_db_instance.main"]}, suffix="-staging")
    cov = rule_coverage(gates, [old], sha=SHA, rules=(), eligible={})
    (db,) = run_gates(gates, cov, STATUS, at=0.0)[DNS].verdicts
    assert (db.state, db.approvers) == ("voided", ())
    assert "another object" in db.note


def test_approvals_at_another_sha_count_for_no_change() -> None:
    gates = {DNS: {"aws_db_instance.main": gated("aws_db_instance.main")}}
    stale = approval("bob", {DNS: ["aws_db_instance.main"]}, sha="f" * 40)
    cov = rule_coverage(gates, [stale], sha=SHA, rules=(), eligible={})
    assert cov.approved_by == {}
    assert run_gates(gates, cov, STATUS, at=0.0)[DNS].verdicts[0].state == "waiting"


def test_approvers_per_change_keep_the_first_spelling_and_order() -> None:
    gates = {DNS: {"a.b": gated("a.b"), "c.d": gated("c.d")}}
    given_ = [
        approval("Bob", {DNS: ["a.b"]}),
        approval("alice", {DNS: ["a.b", "c.d"]}),
        approval("bob", {DNS: ["c.d"]}),
    ]
    cov = rule_coverage(gates, given_, sha=SHA, rules=(), eligible={})
    assert cov.approved_by == {(DNS, "a.b"): ("Bob", "alice"), (DNS, "c.d"): ("alice", "bob")}


def test_a_verdict_without_coverage_never_says_approved() -> None:
    v = verdict(DNS, gated("x.y"), None)
    assert (v.state, v.approvers) == ("waiting", ())


# -- every gated change gets exactly one verdict, and "approved" is exactly what the coverage approved ------

identities = st.sampled_from([DNS, WEB, "net@default:net", "db@prod:db"])
keys = st.sampled_from(
    ["aws_db_instance.main", "aws_s3_bucket.x[0]", "run local-exec t", "update aws_iam_role.r", "limit max_destroys"]
)
gate_maps = st.dictionaries(identities, st.lists(keys, max_size=5, unique=True), max_size=4)
logins = st.sampled_from(["alice", "bob", "Bob", "carol"])


@st.composite
def judged(draw: st.DrawFn) -> tuple[Gates, Coverage]:
    raw = draw(gate_maps)
    suffixes = {(p, k): draw(st.sampled_from(["", "-other"])) for p, ks in raw.items() for k in ks}
    gates = {p: {k: gated(k, suffixes[(p, k)]) for k in ks} for p, ks in raw.items()}
    approvals = []
    for _ in range(draw(st.integers(0, 4))):
        picked = {p: draw(st.lists(st.sampled_from(ks), unique=True)) for p, ks in raw.items() if ks}
        approvals.append(approval(draw(logins), picked, suffix=draw(st.sampled_from(["", "-other"]))))
    rules = draw(
        st.lists(
            st.builds(
                DestroyRule,
                match=st.sampled_from([("aws_db_instance.*",), ("*",), ("aws_s3_bucket.x",)]),
                approvals=st.integers(1, 3),
                never=st.booleans(),
            ),
            max_size=2,
        )
    )
    return gates, rule_coverage(gates, approvals, sha=SHA, rules=tuple(rules), eligible={})


@given(judged())
def test_every_gated_change_gets_exactly_one_verdict(case: tuple[Gates, Coverage]) -> None:
    gates, cov = case
    runs = run_gates(gates, cov, STATUS, at=0.0)
    assert set(runs) == set(gates)
    for identity, run in runs.items():
        assert [v.key for v in run.verdicts] == list(gates[identity])
        assert all(v.state in VERDICT_STATES for v in run.verdicts)
        assert all(v.kind == gates[identity][v.key].kind for v in run.verdicts)


@given(judged())
def test_approved_verdicts_are_exactly_the_coverages_approved_pairs(case: tuple[Gates, Coverage]) -> None:
    gates, cov = case
    verdicts = {(i, v.key): v for i, run in run_gates(gates, cov, STATUS, at=0.0).items() for v in run.verdicts}
    assert {pair for pair, v in verdicts.items() if v.state == "approved"} == cov.approved_pairs
    assert {pair for pair, v in verdicts.items() if v.state == "never"} == cov.never
    assert {pair for pair, v in verdicts.items() if v.state == "voided"} == cov.voided - cov.never
    for pair, v in verdicts.items():
        assert v.approvers == cov.approved_by.get(pair, ())
        assert v.state != "approved" or v.approvers  # nothing is approved by nobody


@given(gate_maps)
def test_unjudged_changes_are_all_waiting(raw: dict[str, list[str]]) -> None:
    gates = {p: {k: gated(k) for k in ks} for p, ks in raw.items()}
    runs = run_gates(gates, None, STATUS, at=0.0)
    assert all(v.state == "waiting" and not v.approvers for run in runs.values() for v in run.verdicts)
    assert sum(len(r.verdicts) for r in runs.values()) == sum(len(ks) for ks in raw.values())


def test_an_apply_standing_reads_as_the_coverage_of_its_one_project() -> None:
    gates = {
        "a.b": gated("a.b"),
        "c.d": gated("c.d"),
        "e.f": gated("e.f"),
        "g.h": gated("g.h"),
    }
    standing = Standing(
        keys=frozenset({"a.b"}),
        approvers=("bob",),
        voided=("e.f", "not.planned"),
        approved_by={"a.b": ("bob",), "c.d": ("carol",), "not.planned": ("x",)},
        notes={"c.d": "destroy_rules[0]: needs 1 more approval", "g.h": "destroy_rules[1]: never — no approval"},
        never=frozenset({"g.h"}),
    )
    cov = standing.coverage(DNS, gates)
    assert cov.approved_pairs == {(DNS, "a.b")} and cov.total == 4
    (run,) = run_gates({DNS: gates}, cov, ("failure", "blocked"), at=0.0).values()
    assert [(v.key, v.state, v.approvers, v.note) for v in run.verdicts] == [
        ("a.b", "approved", ("bob",), "approved"),
        ("c.d", "waiting", ("carol",), "destroy_rules[0]: needs 1 more approval"),
        ("e.f", "voided", (), "approved before for another object (or other code): needs 1 approval of this plan"),
        ("g.h", "never", (), "destroy_rules[1]: never — no approval"),
    ]
