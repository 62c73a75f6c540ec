"""`plangate gate PLAN.json [--json]`: exit codes, text and JSON on real fixtures and on bad input."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from core.plan import parse_plan
from plumbing.gate_cli import main

PLANS = Path(__file__).parent / "fixtures" / "terraform" / "plans"
INDEX = {e["file"]: e for e in json.loads((PLANS / "INDEX.json").read_text())["plans"]}


def gate_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.mark.parametrize("name", sorted(INDEX))
def test_fixture_exit_code_and_json(capsys: pytest.CaptureFixture[str], name: str) -> None:
    entry = INDEX[name]
    code, doc = gate_json(capsys, str(PLANS / name))
    runs = [] if "parse_error" in entry else parse_plan((PLANS / name).read_bytes()).code_runs
    if "parse_error" in entry or entry["top_level_flags"].get("errored"):
        assert (code, doc["verdict"]) == (2, "error")
        assert doc["error"]
    elif entry["has_delete"] or runs:
        assert (code, doc["verdict"]) == (3, "blocked")
    else:
        assert (code, doc["verdict"]) == (0, "apply")
    assert doc["runs_code"] == [{"key": r.key, "what": r.what} for r in runs]
    if "parse_error" not in entry:
        assert set(doc) == {"verdict", "destroys", "runs_code", "counts"} | ({"error"} if code == 2 else set())
        expected = sum(n for actions, n in entry["actions"].items() if "delete" in actions.split("/"))
        assert len(doc["destroys"]) == doc["counts"]["destroy"] == expected
        assert set(doc["counts"]) == {"add", "change", "destroy", "import", "forget"}


def test_json_destroy_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = gate_json(capsys, str(PLANS / "terraform-json/action_reason.plan.json"))
    assert code == 3
    assert doc == {
        "verdict": "blocked",
        "destroys": [
            {
                "address": "null_resource.example",
                "deposed": None,
                "actions": ["delete", "create"],
                "reason": "replace_because_tainted",
            }
        ],
        "runs_code": [],
        "counts": {"add": 1, "change": 0, "destroy": 1, "import": 0, "forget": 0},
    }


def write(tmp_path: Path, doc: Any) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_text_lists_every_destroy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plan = {
        "format_version": "1.2",
        "resource_changes": [
            {
                "address": "a.one",
                "mode": "managed",
                "type": "a",
                "change": {"actions": ["delete"]},
                "action_reason": "delete_because_no_resource_config",
            },
            {
                "address": "a.two",
                "mode": "managed",
                "type": "a",
                "deposed": "0badf00d",
                "change": {"actions": ["delete"]},
            },
            {"address": 'a.three["k"]', "mode": "managed", "type": "a", "change": {"actions": ["create", "delete"]}},
            {"address": "a.four", "mode": "managed", "type": "a", "change": {"actions": ["create"]}},
        ],
    }
    assert main([write(tmp_path, plan)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "plangate gate: blocked: 3 to destroy; needs /approve-destroy",
        "Destroys (3):",
        "  - a.one: delete (delete_because_no_resource_config)",
        "  - a.two (deposed 0badf00d): delete",
        '  - a.three["k"]: create + delete',
        "Plan: 2 to add, 0 to change, 3 to destroy.",
    ]


PROVISIONED = {
    "format_version": "1.2",
    "resource_changes": [
        {"address": "terraform_data.x", "mode": "managed", "type": "terraform_data", "change": {"actions": ["create"]}}
    ],
    "configuration": {
        "root_module": {
            "resources": [
                {
                    "address": "terraform_data.x",
                    "mode": "managed",
                    "type": "terraform_data",
                    "name": "x",
                    "provisioners": [
                        {"type": "local-exec", "expressions": {"command": {"constant_value": "rm -rf /"}}}
                    ],
                }
            ]
        }
    },
}


def test_code_run_at_apply_needs_approval_like_a_destroy(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """No destroy at all, but an apply would run a local-exec provisioner with the apply's credentials."""
    path = write(tmp_path, PROVISIONED)
    assert main([path]) == 3
    assert capsys.readouterr().out.splitlines() == [
        "plangate gate: blocked: 1 to run code at apply; needs approval",
        "Runs code at apply (1):",
        "  - local-exec provisioner of terraform_data.x (at create)",
        "Plan: 1 to add, 0 to change, 0 to destroy.",
    ]
    code, doc = gate_json(capsys, path)
    assert (code, doc["verdict"], doc["destroys"]) == (3, "blocked", [])
    assert doc["runs_code"] == [
        {
            "key": "run provisioners of terraform_data.x",
            "what": "local-exec provisioner of terraform_data.x (at create)",
        }
    ]


def test_code_run_beside_destroys_and_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    doomed = {"address": "a.gone", "mode": "managed", "type": "a", "change": {"actions": ["delete"]}}
    plan = {**PROVISIONED, "resource_changes": [*PROVISIONED["resource_changes"], doomed]}
    assert main([write(tmp_path, plan)]) == 3
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0] == "plangate gate: blocked: 1 to destroy; needs /approve-destroy; 1 to run code at apply; needs approval"
    )
    assert out[3:5] == ["Runs code at apply (1):", "  - local-exec provisioner of terraform_data.x (at create)"]
    code, doc = gate_json(capsys, write(tmp_path, {**PROVISIONED, "errored": True}))
    assert (code, doc["verdict"]) == (2, "error") and len(doc["runs_code"]) == 1  # listed, and still an error


def test_text_apply(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(PLANS / "checkov/windows_utf16_bom.plan.json")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "plangate gate: apply: no destroys",
        "Plan: 1 to add, 0 to change, 0 to destroy.",
    ]


def test_unknown_action_is_an_error_listing_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plan = {
        "format_version": "1.2",
        "resource_changes": [{"address": "a.x", "mode": "managed", "type": "a", "change": {"actions": ["teleport"]}}],
    }
    code, doc = gate_json(capsys, write(tmp_path, plan))
    assert code == 2
    assert doc["verdict"] == "error" and '["teleport"]' in doc["error"]
    assert doc["destroys"] == [{"address": "a.x", "deposed": None, "actions": ["teleport"], "reason": None}]


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"not json",
        b'{"format_version": "1.2"} {}',
        b'{"format_version": "9.0", "resource_changes": []}',
        b"\xff\xfe\x00\xd8",
    ],
)
def test_bad_input_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    assert main([str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"plangate gate: error: cannot read {path}: ")
    code, doc = gate_json(capsys, str(path))
    assert code == 2
    assert doc["verdict"] == "error" and doc["destroys"] == [] == doc["runs_code"] and doc["counts"] == {}
    assert doc["error"]


def test_missing_file_and_directory_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main([str(tmp_path / "absent.json")]) == 2
    assert "No such file or directory" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_reads_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    data = (PLANS / "opentofu/show-json/basic-delete.json").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["-"]) == 3
    assert "test_instance.test-delete" in capsys.readouterr().out


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: plangate gate" in capsys.readouterr().err
    assert main(["--help"]) == 0
    said = " ".join(capsys.readouterr().out.split())  # argparse wraps the epilog
    assert "exit status: 0 may apply, 3 destroys or code run at apply need approval, 2 cannot decide" in said
