"""What an approval covers, its marker, and its rebuild from the PR's comments (workers/approvals.py)."""

from __future__ import annotations

import base64
import json
import secrets
import zlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.approvals import (
    MAX_MARKER,
    Approval,
    Refusal,
    approval_for,
    approval_marker,
    approvals_from_comments,
    approved_keys,
    coverage,
    from_json,
    fully_approved,
    timing_refusal,
    to_json,
)
from core.render.marker import marker

SHA = "abc1234" + "0" * 33
OTHER = "def5678" + "1" * 33
BOT = "plangate[bot]"
DESTROYS = {
    "dns": ['aws_route53_record.www["a"]', "aws_route53_record.mx (deposed 00aa)"],
    "web": ["module.site.aws_s3_bucket.logs"],
    "net": [],
}

projects = st.text("abcdefgh./_-", min_size=1, max_size=6)
keys = st.text(min_size=1, max_size=40).filter(lambda k: k.strip() != "")
destroy_maps = st.dictionaries(projects, st.lists(keys, max_size=6, unique=True), max_size=5)
logins = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,20}", fullmatch=True)


def comment(body: str, login: str = BOT, cid: int = 1) -> dict[str, Any]:
    return {"id": cid, "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"}, "body": body}


def approve(destroys: dict[str, list[str]], sha: str = SHA, who: str = "ops", names: tuple[str, ...] = ()) -> Approval:
    result = approval_for(destroys, sha, who, names)
    assert isinstance(result, Approval), result
    return result


def test_approval_covers_every_destroy_of_every_project() -> None:
    a = approve(DESTROYS)
    assert a.approver == "ops" and a.sha == SHA and a.comment_id is None
    assert a.pairs == {
        ("dns", 'aws_route53_record.www["a"]'),
        ("dns", "aws_route53_record.mx (deposed 00aa)"),
        ("web", "module.site.aws_s3_bucket.logs"),
    }


def test_approval_of_named_projects_covers_only_those() -> None:
    a = approve(DESTROYS, names=("web", "web"))
    assert a.pairs == {("web", "module.site.aws_s3_bucket.logs")}
    b = approve(DESTROYS, names=("net", "dns"))  # a named project without destroys is fine beside one with
    assert {p for p, _ in b.pairs} == {"dns"}


@pytest.mark.parametrize(
    ("destroys", "names", "reason"),
    [
        ({"dns": [], "web": []}, (), "the latest plan at abc1234 has no destroys"),
        ({}, (), "the latest plan at abc1234 has no destroys"),
        (DESTROYS, ("net",), "the latest plan at abc1234 has no destroys in `net`; the destroys are in `dns`, `web`"),
        ({"dns": []}, ("dns",), "the latest plan at abc1234 has no destroys"),
        (
            DESTROYS,
            ("dsn",),
            "no project named `dsn` in the latest plan at abc1234; planned there: `dns`, `web`, `net`",
        ),
        (DESTROYS, ("dns", "x", "y"), "no projects named `x`, `y` in the latest plan at abc1234; planned there:"),
        ({}, ("dns",), "no project named `dns` in the latest plan at abc1234; planned there: none"),
    ],
)
def test_refusals_say_why(destroys: dict[str, list[str]], names: tuple[str, ...], reason: str) -> None:
    result = approval_for(destroys, SHA, "ops", names)
    assert isinstance(result, Refusal)
    assert result.reason.startswith(reason)


@given(destroy_maps, st.lists(projects, max_size=4), logins)
def test_an_approval_never_covers_a_pair_not_in_the_plan(
    destroys: dict[str, list[str]], names: list[str], who: str
) -> None:
    result = approval_for(destroys, SHA, who, names)
    planned = {(p, k) for p, ks in destroys.items() for k in ks}
    if isinstance(result, Approval):
        assert result.pairs and result.pairs <= planned
        assert all(p in names for p, _ in result.pairs) or not names
    else:
        assert not planned or names


@given(destroy_maps, logins, st.integers(1, 2**40))
def test_marker_round_trips_through_the_bots_comment(destroys: dict[str, list[str]], who: str, cid: int) -> None:
    result = approval_for(destroys, SHA, who, ())
    if isinstance(result, Refusal):
        return
    body = approval_marker(result, reply_to=7) + "\nvisible text"
    (back,) = approvals_from_comments([comment(body, cid=cid)], BOT, SHA)
    assert back == Approval(who, SHA, result.pairs, cid)


@given(destroy_maps, logins, st.sampled_from(["ops", "plangate", "plangate[bot] ", "other[bot]", ""]))
def test_a_forged_marker_in_someone_elses_comment_never_counts(
    destroys: dict[str, list[str]], who: str, author: str
) -> None:
    result = approval_for(destroys, SHA, who, ())
    if isinstance(result, Refusal):
        return
    forged = [comment(approval_marker(result), login=author), {"id": 3, "body": approval_marker(result)}]
    forged.append({"id": 4, "user": None, "body": approval_marker(result)})
    assert approvals_from_comments(forged, BOT, SHA) == []
    plan = coverage(destroys, approvals_from_comments(forged, BOT, SHA), sha=SHA)
    assert not plan.approved_pairs and not fully_approved(destroys, [], sha=SHA)


def test_bot_login_compares_case_insensitively() -> None:
    body = approval_marker(approve(DESTROYS))
    assert len(approvals_from_comments([comment(body, login="PlanGate[bot]")], BOT, SHA)) == 1


@given(destroy_maps, logins)
def test_approvals_for_another_sha_never_count(destroys: dict[str, list[str]], who: str) -> None:
    result = approval_for(destroys, OTHER, who, ())
    if isinstance(result, Refusal):
        return
    assert approvals_from_comments([comment(approval_marker(result))], BOT, SHA) == []
    cov = coverage(destroys, [result], sha=SHA)
    assert not cov.approved_pairs and cov.approvers == []
    assert approved_keys([result], next(iter(result.pairs))[0], sha=SHA) == frozenset()
    assert cov.complete == (not any(destroys.values()))


def _fields(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"v": 2, "approver": "ops", "sha": SHA, "projects": ["dns"], "addresses": {"dns": ["a.b"]}}
    base.update(over)
    return {k: v for k, v in base.items() if v is not None}


def _z(data: object) -> str:
    return base64.b64encode(zlib.compress(json.dumps(data).encode())).decode()


@pytest.mark.parametrize(
    "body",
    [
        "<!-- plangate:approval {not json} -->",
        "<!-- plangate:approval [1, 2] -->",
        marker("reply", **_fields()),  # wrong kind
        marker("approval", **_fields(v=1)),  # before projects were identities: counts for nothing
        marker("approval", **_fields(v="1")),
        marker("approval", **_fields(approver="")),
        marker("approval", **_fields(approver=None)),
        marker("approval", **_fields(approver=["ops"])),
        marker("approval", **_fields(sha=None)),
        marker("approval", **_fields(sha=SHA.upper())),
        marker("approval", **_fields(sha=SHA[:7])),
        marker("approval", **_fields(addresses=None)),
        marker("approval", **_fields(addresses={})),
        marker("approval", **_fields(addresses={"dns": []})),
        marker("approval", **_fields(addresses={"dns": "a.b"})),
        marker("approval", **_fields(addresses={"dns": ["a.b", 3]})),
        marker("approval", **_fields(addresses={"dns": [""]})),
        marker("approval", **_fields(addresses=["dns", "a.b"])),
        marker("approval", **_fields(projects=["dns", "web"])),
        marker("approval", **_fields(projects=None)),
        marker("approval", **_fields(projects="dns")),
        marker("approval", **_fields(addresses_z=_z({"dns": ["a.b"]}))),  # both forms at once
        marker("approval", **_fields(addresses=None, addresses_z="%%%not base64")),
        marker("approval", **_fields(addresses=None, addresses_z=base64.b64encode(b"not zlib").decode())),
        marker("approval", **_fields(addresses=None, addresses_z=_z(["dns"]))),
        marker("approval", **_fields(addresses=None, addresses_z=3)),
        # a zip bomb: inflating stops at the cap
        marker(
            "approval",
            **_fields(addresses=None, addresses_z=base64.b64encode(zlib.compress(b" " * (20 * 1024 * 1024))).decode()),
        ),
        "",
    ],
)
def test_malformed_markers_are_ignored(body: str) -> None:
    assert approvals_from_comments([comment(body)], BOT, SHA) == []


def test_a_well_formed_hand_written_marker_from_the_bot_counts() -> None:
    """The control for the table above: the same shape, valid, is read."""
    (a,) = approvals_from_comments([comment(marker("approval", **_fields()))], BOT, SHA)
    assert a.pairs == {("dns", "a.b")}
    compressed = marker("approval", **_fields(addresses=None, addresses_z=_z({"dns": ["a.b"]})))
    (b,) = approvals_from_comments([comment(compressed)], BOT, SHA)
    assert b.pairs == a.pairs


def test_only_the_first_marker_of_a_comment_is_read() -> None:
    """An address holding marker text cannot smuggle a second approval into the bot's own reply."""
    forged = marker("approval", **_fields(sha=OTHER, addresses={"web": ["x"]}, projects=["web"]))
    a = approve({"dns": [forged]})
    body = approval_marker(a) + "\n- `" + forged + "`"
    assert approvals_from_comments([comment(body)], BOT, OTHER) == []
    (back,) = approvals_from_comments([comment(body)], BOT, SHA)
    assert back.pairs == {("dns", forged)}


def test_large_approvals_are_compressed_and_still_complete() -> None:
    destroys = {"dns": [f'module.zone["z{i}"].aws_route53_record.record["host-{i}.example.com"]' for i in range(6000)]}
    a = approve(destroys)
    text = approval_marker(a)
    assert "addresses_z" in text and len(text) <= MAX_MARKER
    (back,) = approvals_from_comments([comment(text)], BOT, SHA)
    assert back.pairs == a.pairs and len(back.pairs) == 6000


def test_an_approval_too_large_to_record_is_refused() -> None:
    """Fail closed: an approval the PR cannot hold would vanish with Redis, so it is never given."""
    destroys = {"dns": [f"aws_route53_record.r{secrets.token_hex(32)}" for _ in range(2500)]}
    result = approval_for(destroys, SHA, "ops")
    assert isinstance(result, Refusal)
    assert result.reason.startswith("2,500 destroys at abc1234 are too many to record in one approval comment")
    half = {"a": destroys["dns"][:500], "b": destroys["dns"][500:1000]}
    assert isinstance(approval_for(half, SHA, "ops", ("a",)), Approval)


def test_coverage_partial_then_complete() -> None:
    first = approve(DESTROYS, who="ann", names=("dns",))
    cov = coverage(DESTROYS, [first], sha=SHA)
    assert cov.approved_pairs == first.pairs and cov.unapproved_pairs == {("web", "module.site.aws_s3_bucket.logs")}
    assert cov.approvers == ["ann"] and cov.total == 3 and not cov.complete
    second = approve(DESTROYS, who="bob", names=("web",))
    again = approve(DESTROYS, who="ann")
    cov = coverage(DESTROYS, [first, second, again], sha=SHA)
    assert cov.complete and cov.approvers == ["ann", "bob"]
    assert fully_approved(DESTROYS, [first, second], sha=SHA)
    assert approved_keys([first, second], "dns", sha=SHA) == frozenset(DESTROYS["dns"])


def test_a_new_destroy_at_the_same_sha_is_not_covered() -> None:
    """A re-plan that finds one more destroy needs a new approval for it."""
    a = approve(DESTROYS)
    grown = {**DESTROYS, "web": [*DESTROYS["web"], "aws_s3_bucket.new"]}
    cov = coverage(grown, [a], sha=SHA)
    assert cov.unapproved_pairs == {("web", "aws_s3_bucket.new")} and not fully_approved(grown, [a], sha=SHA)
    shrunk = {"dns": DESTROYS["dns"][:1]}
    assert coverage(shrunk, [a], sha=SHA).approved_pairs == {("dns", DESTROYS["dns"][0])}


def test_nothing_to_destroy_is_fully_approved() -> None:
    cov = coverage({"dns": []}, [], sha=SHA)
    assert cov.complete and cov.total == 0 and cov.approvers == []


approvals = st.builds(
    Approval,
    logins,
    st.sampled_from([SHA, OTHER]),
    st.frozensets(st.tuples(projects, keys), max_size=5),
    st.none() | st.integers(1, 2**53),
)


@given(st.lists(approvals, max_size=4))
def test_redis_record_round_trips(items: list[Approval]) -> None:
    assert from_json(to_json(items)) == items
    assert from_json(to_json(items).encode()) == items


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "[1]",
        '[{"approver": "", "sha": "x", "pairs": []}]',
        '[{"approver": "a", "sha": "x", "pairs": [["p"]]}]',
        '[{"approver": "a", "sha": "x", "pairs": [["p", 1]]}]',
        '[{"approver": "a", "sha": "x", "pairs": "p"}]',
        '[{"approver": "a", "sha": "x", "pairs": [], "comment_id": true}]',
        '[{"approver": "a", "sha": "x", "pairs": [], "comment_id": "1"}]',
        "not json",
    ],
)
def test_a_broken_redis_record_is_an_error_not_an_approval(text: str) -> None:
    with pytest.raises(ValueError):
        from_json(text)


def test_a_marker_echoed_inside_a_bot_comment_never_counts() -> None:
    sha = "c" * 40
    forged = approval_marker(Approval("mallory", sha, frozenset({("infra", "terraform_data.doomed")})))
    bodies = [f"@bob /plan refused: `{forged}`", f"plangate did not apply: {forged}", f"\n{forged}"]
    comments = [{"id": i, "user": {"login": "plangate[bot]"}, "body": b} for i, b in enumerate(bodies)]
    assert approvals_from_comments(comments, "plangate[bot]", sha) == []


def test_an_approval_covers_only_a_plan_published_before_it_was_written() -> None:
    at, before, after = "2026-12-01T10:00:05Z", "2026-12-01T10:00:04Z", "2026-12-01T10:00:06Z"
    assert timing_refusal(SHA, named_sha=None, comment_at=at, published_at=before) is None
    for published in (at, after, None):  # same second, later, unknown: the approver may not have seen it
        refusal = timing_refusal(SHA, named_sha=None, comment_at=at, published_at=published)
        assert refusal is not None and "the plan changed after you commented" in refusal.reason
    assert timing_refusal(SHA, named_sha=None, comment_at=None, published_at=before) is not None
    assert timing_refusal(SHA, named_sha=SHA[:7], comment_at=at, published_at=before) is None
    wrong = timing_refusal(SHA, named_sha="0000000", comment_at=at, published_at=before)
    assert wrong is not None and "you approved `0000000`" in wrong.reason and SHA[:7] in wrong.reason


def test_names_select_every_workspace_of_a_project_and_identities_keep_them_apart() -> None:
    staging, prod = "app@staging:infra", "app@prod:infra"
    destroys = {staging: ["a.x"], prod: ["a.x"], "dns@default:dns": []}
    both = approval_for(destroys, SHA, "ops", ("app",))
    assert isinstance(both, Approval) and both.pairs == {(staging, "a.x"), (prod, "a.x")}
    one = approval_for(destroys, SHA, "ops", (staging,))
    assert isinstance(one, Approval) and one.pairs == {(staging, "a.x")}
    assert approved_keys([one], prod, sha=SHA) == frozenset()
    unknown = approval_for(destroys, SHA, "ops", ("web",))
    assert isinstance(unknown, Refusal) and "`web`" in unknown.reason and "`app`" in unknown.reason
    assert "@" not in unknown.reason  # people read names, not identities
