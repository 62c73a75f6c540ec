"""Keyless cloud credentials end to end: `plangate web` serves the issuer, a PR's plan finds a `phase:plan`
token for the plan role in its sandbox (whatever the PR's own `.plangate.yml` says), the apply after the
merge a `phase:apply` token for the apply role, and each verifies with PyJWT's PyJWKClient against the
served key set. Stand-in GitHub, real workers, real terraform in its sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.request import urlopen

import jwt
import pytest
import redis

from plumbing.records import Records
from plumbing.run_store import RunStore
from standin.gitops import Executable, FileContent
from standin.local_redis import free_port
from standin.stack import running_stack
from tests.e2e import applied_state, bot_bodies, planned, status
from tests.tfproject import main_tf

pytestmark = pytest.mark.e2e

PLAN_ROLE = "arn:aws:iam::123456789012:role/plangate-plan"
APPLY_ROLE = "arn:aws:iam::123456789012:role/plangate-apply"
STOLEN = "arn:aws:iam::999999999999:role/admin"
CONFIG = """version: 1
gate_code_at_apply: false
projects:
  - name: infra
    dir: infra
    credentials:
      aws: {{plan_role: '{plan}', apply_role: '{apply}'}}
"""
# A "provider" the PR ships: terraform runs it during the plan. It keeps the token it was given, looks
# for any other, and prints it (terraform's error quotes the plugin's first line into the comment).
SNOOP = """#!/bin/bash
{{
  echo "role=$AWS_ROLE_ARN session=$AWS_ROLE_SESSION_NAME"
  echo "file=$AWS_WEB_IDENTITY_TOKEN_FILE"
  cp "$AWS_WEB_IDENTITY_TOKEN_FILE" {marks}/plan.jwt
  echo "tokens: $(ls {tokens} | tr '\n' ' ')"
  ls {keys} 2>&1
}} > {marks}/plan-report.txt 2>&1
echo "token $(cat "$AWS_WEB_IDENTITY_TOKEN_FILE")"
exit 1
"""
SNOOP_TF = """terraform {
  required_providers {
    snoop = { source = "example.com/evil/snoop", version = "1.0.0" }
  }
}
provider "snoop" {}
"""
PLUGIN = "infra/terraform.d/plugins/example.com/evil/snoop/1.0.0/linux_amd64/terraform-provider-snoop_v1.0.0"
APPLY_TF = """resource "terraform_data" "oidc" {{
  provisioner "local-exec" {{
    command = "t=$AWS_WEB_IDENTITY_TOKEN_FILE; cp $t {marks}/apply.jwt && echo $AWS_ROLE_ARN $t > {marks}/role"
  }}
}}
"""


def _verified(issuer: str, token: str) -> dict[str, object]:
    """The claims, verified as a cloud would: the key from the served JWKS, signature, iss, aud, exp."""
    client = jwt.PyJWKClient(f"{issuer}/.well-known/jwks", cache_keys=False)
    key = client.get_signing_key_from_jwt(token)
    found: dict[str, object] = jwt.decode(
        token,
        key.key,
        algorithms=["RS256"],
        audience="sts.amazonaws.com",
        issuer=issuer,
        options={"require": ["exp", "iat", "sub", "iss", "aud"]},
    )
    return found


def test_plan_and_apply_get_their_own_phase_token_from_the_default_branchs_config(
    tmp_path: Path, redis_url: str, redis_conn: redis.Redis
) -> None:
    state = applied_state(tmp_path, {"keep": "a"})
    marks, keys = tmp_path / "marks", tmp_path / "oidc-keys"
    marks.mkdir()
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    env = {"PLANGATE_OIDC_KEY_DIR": str(keys), "PLANGATE_PUBLIC_URL": issuer}
    with running_stack(tmp_path, redis_url, web_port=port, extra_env=env) as stack:
        tokens = Path(stack.env["PLANGATE_WORKDIR"]) / "oidc-tokens"
        with urlopen(f"{issuer}/.well-known/openid-configuration") as answer:
            assert json.load(answer)["jwks_uri"] == f"{issuer}/.well-known/jwks"
        config = CONFIG.format(plan=PLAN_ROLE, apply=APPLY_ROLE)
        repo = stack.gh.create_repo(
            "acme", "infra", {"infra/main.tf": main_tf(state, {"keep": "a"}), ".plangate.yml": config}
        )
        stack.gh.set_permission(repo, "alice", "write")

        # A PR that names another role in its own .plangate.yml and ships a provider that reads its token.
        files: dict[str, FileContent] = {
            ".plangate.yml": CONFIG.format(plan=STOLEN, apply=STOLEN),
            "infra/snoop.tf": SNOOP_TF,
            PLUGIN: Executable(SNOOP.format(marks=marks, tokens=tokens, keys=keys)),
        }
        pr = stack.gh.open_pr(repo, "snoop", "alice", "Look around", files)
        status(stack, repo, pr.head_sha, "plangate/plan", "failure")
        report = (marks / "plan-report.txt").read_text()
        assert f"role={PLAN_ROLE} session=plangate-infra-plan" in report  # the default branch's role, not the PR's
        own = report.split("file=", 1)[1].split("\n", 1)[0]
        assert f"tokens: {Path(own).parent.name} \n" in report  # its own step's directory, no other
        assert f"cannot access '{keys}': No such file or directory" in report  # nor the signing keys
        plan_token = (marks / "plan.jwt").read_text()
        claims = _verified(issuer, plan_token)
        assert claims["sub"] == "repo:acme/infra:project:infra:workspace:default:phase:plan"
        assert claims["phase"] == "plan" and claims["pull_request"] == str(pr.number)
        assert claims["repository_id"] == str(repo.id) and claims["sha"] == pr.head_sha
        assert 0 < int(claims["exp"]) - int(claims["iat"]) <= 3600  # type: ignore[call-overload]
        comments = "\n".join(bot_bodies(stack, repo, pr.number))
        assert "plugin message" in " ".join(comments.split()) and plan_token not in comments  # printed, masked
        assert plan_token not in stack.worker_log()
        store = RunStore(Records(redis_conn, stack.private_key))
        (run,) = store.siblings(repo.id, pr.head_sha)
        page = store.read(run.id)
        assert page is not None and any("token" in line.text for line in page.lines)  # its run page: printed...
        assert not any(plan_token in line.text for line in page.lines)  # ...masked

        # A clean PR whose apply runs code: only `terraform apply` gets the apply role's token.
        clean = stack.gh.open_pr(repo, "stamp", "alice", "Stamp", {"infra/oidc.tf": APPLY_TF.format(marks=marks)})
        planned(stack, repo, clean.head_sha)
        merged = stack.gh.merge_pr(clean, merged_by="alice")
        status(stack, repo, merged, "plangate/apply", "success")
        role, apply_file = (marks / "role").read_text().split()
        assert role == APPLY_ROLE
        apply_claims = _verified(issuer, (marks / "apply.jwt").read_text())
        assert apply_claims["sub"] == "repo:acme/infra:project:infra:workspace:default:phase:apply"
        assert apply_claims["ref"] == "main" and apply_claims["sha"] == merged and apply_claims["approvers"] == []
        for used in (own, apply_file):  # each step's token directory is gone with its step
            assert not Path(used).parent.exists()
