"""bot/payloads.py: a `pull_request` body decoded from only the fields plangate reads must give the
handlers exactly what the whole payload gives them, and refuse what is not such a payload."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.events.pulls import plan_job_id, plan_request
from bot.payloads import Malformed, NotJSON, decode

HOOKS = Path(__file__).parent / "fixtures" / "github" / "webhooks"
PULLS = sorted(HOOKS.glob("pull_request.*.json"))


def _body(data: Any) -> bytes:
    return json.dumps(data).encode()


@pytest.mark.parametrize("path", PULLS, ids=[p.name for p in PULLS])
def test_every_published_pull_request_payload_plans_the_same_from_its_few_fields(path: Path) -> None:
    whole = orjson.loads(path.read_bytes())
    few = decode("pull_request", path.read_bytes())
    assert few["action"] == whole["action"]
    assert ("installation" in few) == ("installation" in whole)
    if "installation" in whole:
        assert plan_request(few) == plan_request(whole)
    pull = whole["pull_request"]
    assert plan_job_id(few["repository"]["id"], few["pull_request"]["number"], few["pull_request"]["head"]["sha"]) == (
        plan_job_id(whole["repository"]["id"], pull["number"], pull["head"]["sha"])
    )


@given(
    fork=st.sampled_from(["same", "other", "deleted"]),
    base=st.booleans(),
    default_branch=st.sampled_from([None, "main", "trunk"]),
)
def test_optional_and_null_fields_read_as_the_whole_payload_reads_them(
    fork: str, base: bool, default_branch: str | None
) -> None:
    data = copy.deepcopy(orjson.loads((HOOKS / "pull_request.synchronize.json").read_bytes()))
    pull, repo = data["pull_request"], data["repository"]
    if fork == "other":
        pull["head"]["repo"]["full_name"] = "someone/fork"
    elif fork == "deleted":
        pull["head"]["repo"] = None
    if not base:
        del pull["base"]
    if default_branch is None:
        del repo["default_branch"]
    else:
        repo["default_branch"] = default_branch
    assert plan_request(decode("pull_request", _body(data))) == plan_request(data)


def test_what_is_not_a_pull_request_payload_is_refused_with_its_reason() -> None:
    good = orjson.loads((HOOKS / "pull_request.synchronize.json").read_bytes())
    with pytest.raises(NotJSON):
        decode("pull_request", b'{"action": "opened", "x": [1, }')
    with pytest.raises(Malformed, match="Expected `object`"):
        decode("pull_request", b"[1, 2]")
    with pytest.raises(Malformed, match=r"pull_request.number"):
        decode("pull_request", _body({**good, "pull_request": {**good["pull_request"], "number": "two"}}))
    with pytest.raises(Malformed, match="missing required field `repository`"):
        decode("pull_request", _body({k: v for k, v in good.items() if k != "repository"}))


def test_other_events_are_parsed_whole() -> None:
    body = (HOOKS / "push.default-branch.json").read_bytes()
    assert decode("push", body) == orjson.loads(body)
    with pytest.raises(NotJSON):
        decode("push", b"not json")
    with pytest.raises(Malformed, match="not a JSON object"):
        decode("push", b"[1]")
