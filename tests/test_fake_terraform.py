"""The scale benchmark's stand-in terraform (tests/fakes/terraform_steps.sh) must make plangate's real
parser, gate and renderer do their real work: its plan reads as real terraform's plan of the same
change does, through plangate's own runner in the sandbox."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from core.plan import Plan, parse_plan
from core.plan_output import rendered_plan
from core.sandbox_paths import Grant
from standin.sample import main_tf
from tests.tfproject import apply_directly
from workers.adapters.terraform.env import build_env
from workers.adapters.terraform.sandbox import Sandbox
from workers.adapters.terraform.steps import Terraform

FAKE = Path(__file__).parent / "fakes" / "terraform_steps.sh"
TOOL = shutil.which("tofu") or shutil.which("terraform")
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _runner(tool: str, root: Path, sandbox: Sandbox, work: Path) -> Terraform:
    env = build_env(passthrough=[], source_env={"PATH": "/usr/bin:/bin"}, home=root / "home", plugin_cache=root / "c")
    env["PATH"] = f"{Path(tool).parent}:/usr/bin:/bin"
    env["FAKE_TF_STEP_SECONDS"] = "0"
    (root / "c").mkdir(exist_ok=True)
    return Terraform(
        Path(tool).name, env, timeout=60, memory_limit_bytes=None, sandbox=sandbox, writable=(work,),
        plugin_cache=root / "c", lock_state=False,
    )  # fmt: skip


def _plan(tf: Terraform, work: Path) -> tuple[Plan, str, str]:
    """init → plan → show -json and show, as pipeline.plan runs them: the plan, its text as plangate
    takes it from plan's output, and as `show` renders it."""
    assert tf.init(work).ok
    planfile = work / "plan" / "p.tfplan"
    planfile.parent.mkdir()
    step = tf.plan(work, planfile)
    assert step.ok and step.has_changes and step.digest is not None, step.output
    text = rendered_plan(step.result.stdout.decode())
    assert text is not None, step.result.stdout
    raw, shown = tf.show_both(work, planfile)
    return parse_plan(raw), text, shown


def _fake(tmp: Path) -> Path:
    tool = tmp / "bin" / "terraform"
    tool.parent.mkdir()
    shutil.copy(FAKE, tool)
    tool.chmod(0o755)
    return tool


def test_the_fake_plans_one_destroy_and_one_create_in_the_sandbox(sandbox: Sandbox, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    plan, text, shown = _plan(_runner(str(_fake(tmp_path)), tmp_path, sandbox, work), work)
    assert [(c.address, c.action_class) for c in plan.changes] == [
        ("terraform_data.new", "create"),
        ("terraform_data.old", "delete"),
    ]
    assert [c.address for c in plan.destroys] == ["terraform_data.old"]
    assert plan.counts["add"] == 1 and plan.counts["destroy"] == 1
    assert not plan.errored and plan.applyable and plan.complete
    assert text == shown


def test_the_fake_reads_as_real_terraform_does_for_the_same_change(sandbox: Sandbox, tmp_path: Path) -> None:
    assert TOOL is not None, "this test needs terraform or tofu on PATH"
    if Path(TOOL).name != "terraform":
        return  # the fake copies terraform's words; tofu's say "OpenTofu"
    state = tmp_path / "state" / "p.tfstate"
    apply_directly(tmp_path / "applied", main_tf(state, {"old": "x"}))
    real_work, fake_work = tmp_path / "real", tmp_path / "fake"
    for work in (real_work, fake_work):
        work.mkdir()
    (real_work / "main.tf").write_text(main_tf(state, {"new": "x"}))
    fake_root = tmp_path / "fake-root"
    fake_root.mkdir()
    real_tf = _runner(TOOL, tmp_path, sandbox, real_work)
    real_tf = replace(real_tf, sandbox=replace(sandbox, grants=(*sandbox.grants, Grant(state.parent))))
    real, real_text, _ = _plan(real_tf, real_work)
    fake, fake_text, _ = _plan(_runner(str(_fake(fake_root)), fake_root, sandbox, fake_work), fake_work)

    def shape(plan: Plan) -> list[tuple[str, str, tuple[str, ...], str | None]]:
        return [(c.address, c.action_class, c.actions, c.reason) for c in plan.changes]

    assert shape(fake) == shape(real)
    assert fake.counts == real.counts and fake.outputs == real.outputs and fake.drift == real.drift
    assert _ID.sub("ID", fake_text) == _ID.sub("ID", real_text)


def test_a_plan_before_init_fails_as_terraform_does(sandbox: Sandbox, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    tf = _runner(str(_fake(tmp_path)), tmp_path, sandbox, work)
    (work / "plan").mkdir()
    step = tf.plan(work, work / "plan" / "p.tfplan")
    assert not step.ok and "terraform init" in step.output
    assert not (work / "plan" / "p.tfplan").exists()
