"""Approvals given in reviews (pure): which command a sealed approval answered, a dismissed review's
sealed revocation taking back what was given before it (also when rebuilt from comments), and a reply
to a review naming the review below its marker."""

from __future__ import annotations

from typing import Any

from core.approval_markers import answered_approval, revocation_marker
from core.approvals import approval_marker
from core.render.marker import open_sealed
from core.render.replies import in_reply_to_review, render_approved, render_dismissed
from tests.test_approvals import DESTROYS, KEY, PR, REPO, SHA, approve, comment, read

OTHER_SHA = "e" * 40


def _answer(who: str, reply_to: int, sha: str = SHA) -> str:
    return approval_marker(approve(DESTROYS, sha=sha, who=who), key=KEY, repo_id=REPO, number=PR, reply_to=reply_to)


def _revoked(who: str, *shas: str) -> str:
    return revocation_marker(key=KEY, repo_id=REPO, number=PR, approver=who, shas=shas, review=77)


def test_a_sealed_approval_tells_which_command_it_answered() -> None:
    assert answered_approval(_answer("ops", 77) + "\nApproved", key=KEY, repo_id=REPO, number=PR) == (77, SHA, "ops")
    assert answered_approval(_answer("ops", 77), key=KEY, repo_id=REPO, number=PR + 1) is None
    assert answered_approval("<!-- plangate:approval {} -->", key=KEY, repo_id=REPO, number=PR) is None


def test_a_revocation_takes_back_only_what_was_given_before_it() -> None:
    comments = [
        comment(_answer("ops", 77), cid=1),
        comment(_answer("sre", 78), cid=2),
        comment(_revoked("OPS", SHA), cid=3),  # logins compare as GitHub's do
        comment(_answer("ops", 79), cid=4),  # approved again after the dismissal
    ]
    assert [(a.approver, a.comment_id) for a in read(comments)] == [("sre", 2), ("ops", 4)]
    assert [a.approver for a in read(comments[:3])] == ["sre"]


def test_a_revocation_is_bound_to_its_shas_and_to_plangates_own_comments() -> None:
    given = [comment(_answer("ops", 77, sha=OTHER_SHA), cid=1), comment(_revoked("ops", SHA), cid=2)]
    assert [a.approver for a in read(given, sha=OTHER_SHA)] == ["ops"]  # another SHA's approval stands
    forged = [comment(_answer("ops", 77), cid=1), comment(_revoked("ops", SHA), login="mallory", cid=2)]
    assert [a.approver for a in read(forged)] == ["ops"]  # nobody but plangate can take one back
    copied = _revoked("ops", SHA).replace(SHA, OTHER_SHA)
    assert open_sealed(copied, "revoked", KEY, f"approval/{REPO}/{PR}") is None


def test_a_reply_to_a_review_keeps_its_marker_first_and_names_the_review() -> None:
    approval = approve(DESTROYS)
    seal = approval_marker(approval, key=KEY, repo_id=REPO, number=PR, reply_to=77)
    reply = in_reply_to_review(
        render_approved(approval, _coverage(), marker=seal),
        reviewer="ops",
        url="https://github.com/o/r/pull/7#pullrequestreview-77",
    )
    assert answered_approval(reply, key=KEY, repo_id=REPO, number=PR) == (77, SHA, "ops")
    assert "> In reply to @ops's [review](https://github.com/o/r/pull/7#pullrequestreview-77)" in reply
    assert "[review](javascript" not in in_reply_to_review(reply, reviewer="x", url="javascript:alert(1)")


def test_a_dismissal_says_who_dismissed_whose_review_under_its_seal() -> None:
    body = render_dismissed(reviewer="ops", by="lead", count=1, marker=_revoked("ops", SHA))
    assert open_sealed(body, "revoked", KEY, f"approval/{REPO}/{PR}") == {
        "approver": "ops",
        "shas": [SHA],
        "review": 77,
    }
    assert "@lead dismissed @ops's review" in body and "no longer counts" in body
    assert [a.approver for a in read([comment(_answer("ops", 77), cid=1), comment(body, cid=2)])] == []


def _coverage() -> Any:
    from tests.test_approvals import covered, gates

    return covered(gates(DESTROYS), [approve(DESTROYS)])
