"""plangate as an OIDC issuer, without a server: the claims, the identity each cloud SDK reads, the
credentials read from `.plangate.yml`, and signing keys rotated with an overlap (verified with PyJWT)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import jwt
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bot.oidc import routes
from core import oidc
from core.config import ConfigError, parse_config
from core.config_credentials import AwsCredentials, AzureCredentials, Credentials, GcpCredentials
from core.oidc_env import credentials_for, identity, session_name
from core.render.backstop import Backstop
from plumbing import oidc_settings
from plumbing.oidc_keys import ACTIVATE_AFTER, OVERLAP, KeyRing, SigningKey, jwks, sign
from plumbing.setting_values import SettingsError

PLAN_ROLE = "arn:aws:iam::123456789012:role/plangate-plan"
APPLY_ROLE = "arn:aws:iam::123456789012:role/plangate-apply"
PROVIDER = "//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/plangate/providers/issuer"
TENANT, PLAN_CLIENT, APPLY_CLIENT = (f"{n}0000000-0000-4000-8000-000000000000" for n in "123")
EVERY = Credentials(
    aws=AwsCredentials(plan_role=PLAN_ROLE, apply_role=APPLY_ROLE),
    gcp=GcpCredentials(provider=PROVIDER, apply_service_account="apply-sa@proj-1.iam.gserviceaccount.com"),
    azure=AzureCredentials(tenant_id=TENANT, plan_client_id=PLAN_CLIENT, apply_client_id=APPLY_CLIENT),
)


def _claims(phase: str = "plan", now: int = 1_000_000, **extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "issuer": "https://plangate.example.com",
        "audience": "sts.amazonaws.com",
        "repo": "acme/infra",
        "repo_id": 7,
        "project": "net",
        "workspace": "default",
        "phase": phase,
        "sha": "a" * 40,
        "now": now,
        "lifetime_seconds": 1800,
        "token_id": "t1",
    }
    return oidc.claims(**{**base, **extra})  # type: ignore[arg-type]


def test_the_subject_names_repository_project_workspace_and_phase() -> None:
    assert (
        oidc.subject("acme/infra", "net", "prod", "apply") == "repo:acme/infra:project:net:workspace:prod:phase:apply"
    )
    assert oidc.subject("a/b", "x:y", "w", "plan") == "repo:a/b:project:x_y:workspace:w:phase:plan"
    with pytest.raises(ValueError, match="unknown phase"):
        oidc.subject("a/b", "x", "w", "destroy")


@given(st.text(), st.text(), st.sampled_from(oidc.PHASES))
def test_no_name_can_forge_another_phase_in_the_subject(project: str, workspace: str, phase: str) -> None:
    sub = oidc.subject("acme/infra", project, workspace, phase)
    assert sub.count(":phase:") == 1 and sub.endswith(f":phase:{phase}") and sub.count(":") == 7


def test_claims_say_what_ran_where_and_an_apply_says_who_approved() -> None:
    plan = _claims(pr=12)
    assert plan["sub"] == "repo:acme/infra:project:net:workspace:default:phase:plan"
    assert plan["exp"] == 1_000_000 + 1800 and plan["pull_request"] == "12" and "approvers" not in plan
    apply = _claims("apply", ref="main", approvers=("bob",), lifetime_seconds=99_999)
    assert apply["approvers"] == ["bob"] and apply["ref"] == "main" and apply["exp"] == 1_000_000 + oidc.MAX_LIFETIME
    assert [oidc.lifetime(t) for t in (0.2, 30, 1800, 7200)] == [1, 30, 1800, 3600]  # the step's, at most 1 h
    assert oidc.discovery("https://p.example")["jwks_uri"] == "https://p.example/.well-known/jwks"


def test_each_phase_gets_its_own_identity_and_never_the_other_phases() -> None:
    plan = identity(EVERY, "plan", "/t", "net")
    assert plan.env["AWS_ROLE_ARN"] == PLAN_ROLE and plan.env["AWS_WEB_IDENTITY_TOKEN_FILE"] == "/t/aws.jwt"
    assert plan.env["AZURE_CLIENT_ID"] == PLAN_CLIENT and plan.env["ARM_OIDC_TOKEN_FILE_PATH"] == "/t/azure.jwt"
    assert "service_account_impersonation_url" not in json.loads(plan.files["gcp.json"])
    apply = identity(EVERY, "apply", "/t", "net")
    assert apply.env["AWS_ROLE_ARN"] == APPLY_ROLE and apply.env["ARM_CLIENT_ID"] == APPLY_CLIENT
    google = json.loads(apply.files["gcp.json"])
    assert google["audience"] == PROVIDER and google["credential_source"] == {"file": "/t/gcp.jwt"}
    assert google["service_account_impersonation_url"].endswith(
        "/apply-sa@proj-1.iam.gserviceaccount.com:generateAccessToken"
    )
    assert {t.audience for t in apply.tokens} == {
        "sts.amazonaws.com",
        f"https:{PROVIDER}",
        "api://AzureADTokenExchange",
    }
    assert identity(EVERY, "drift", "/t", "net").env["AWS_ROLE_ARN"] == PLAN_ROLE  # a drift check plans
    apply_only = Credentials(aws=AwsCredentials(apply_role=APPLY_ROLE))
    assert identity(apply_only, "plan", "/t", "net").empty and identity(None, "apply", "/t", "net").empty
    assert session_name("a" * 80, "apply").startswith("plangate-a") and len(session_name("a" * 80, "apply")) == 64
    assert session_name("x y/z", "plan") == "plangate-x_y_z-plan"


def test_credentials_come_from_the_listed_project_else_the_servers_defaults() -> None:
    config = parse_config(
        "version: 1\nprojects:\n  - name: net\n    dir: infra/net\n    credentials:\n"
        f"      aws: {{plan_role: '{PLAN_ROLE}'}}\n  - name: app\n    dir: app\n"
    )
    defaults = Credentials(aws=AwsCredentials(plan_role="arn:aws:iam::210987654321:role/default"))
    found = credentials_for(config.projects, "net", "default", "infra/net", defaults)
    assert found is not None and found.aws is not None and found.aws.plan_role == PLAN_ROLE
    assert credentials_for(config.projects, "app", "default", "app", defaults) == defaults
    assert credentials_for(config.projects, "net", "prod", "infra/net", None) is None  # another workspace: not listed
    assert credentials_for(None, "net", "default", "infra/net", defaults) == defaults


@pytest.mark.parametrize(
    ("credentials", "error"),
    [
        (
            "aws: {plan_role: 'arn:aws:iam::12:role/x'}",
            "credentials.aws.plan_role: 'arn:aws:iam::12:role/x' is not a valid IAM role ARN",
        ),
        (
            "aws: {apply_rol: x}",
            "credentials.aws.apply_rol: unknown key (expected one of: plan_role, apply_role, audience)",
        ),
        ("gcp: {plan_service_account: 'a@b.iam.gserviceaccount.com'}", "credentials.gcp.provider: required"),
        ("azure: {tenant_id: nope}", "credentials.azure.tenant_id: 'nope' is not a valid tenant id (a UUID)"),
        ("vault: {}", "credentials.vault: unknown key (expected one of: aws, gcp, azure)"),
    ],
)
def test_a_wrong_credentials_key_is_a_config_error_naming_it(credentials: str, error: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(f"version: 1\nprojects:\n  - name: net\n    dir: net\n    credentials:\n      {credentials}\n")
    assert f"projects[0].{error}" in str(raised.value)


def test_settings_need_an_https_issuer_and_valid_defaults(tmp_path: Path) -> None:
    assert oidc_settings.load({}) is None
    on = oidc_settings.load({"PLANGATE_OIDC_KEY_DIR": str(tmp_path), "PLANGATE_PUBLIC_URL": "https://p.example/"})
    assert on is not None and on.issuer == "https://p.example" and on.key_dir == tmp_path and on.defaults is None
    local = oidc_settings.load({"PLANGATE_OIDC_KEY_DIR": "k", "PLANGATE_OIDC_ISSUER": "http://127.0.0.1:8000"})
    assert local is not None and local.issuer == "http://127.0.0.1:8000"
    for env, name in [
        ({"PLANGATE_OIDC_KEY_DIR": "k"}, "PLANGATE_OIDC_ISSUER"),
        ({"PLANGATE_OIDC_KEY_DIR": "k", "PLANGATE_OIDC_ISSUER": "http://plangate.example"}, "PLANGATE_OIDC_ISSUER"),
        ({"PLANGATE_OIDC_KEY_DIR": "k", "PLANGATE_PUBLIC_URL": "https://p.example/?x=1"}, "PLANGATE_PUBLIC_URL"),
        (
            {"PLANGATE_OIDC_KEY_DIR": "k", "PLANGATE_PUBLIC_URL": "https://p", "PLANGATE_OIDC_CREDENTIALS": "{"},
            "PLANGATE_OIDC_CREDENTIALS",
        ),
    ]:
        with pytest.raises(SettingsError) as raised:
            oidc_settings.load(env)
        assert raised.value.name == name
    made = oidc_settings.load(
        {
            "PLANGATE_OIDC_KEY_DIR": "k",
            "PLANGATE_PUBLIC_URL": "https://p",
            "PLANGATE_OIDC_CREDENTIALS": json.dumps({"aws": {"plan_role": PLAN_ROLE}}),
        }
    )
    assert made is not None and made.defaults == Credentials(aws=AwsCredentials(plan_role=PLAN_ROLE))


def _verify(token: str, keys: list[dict[str, object]], now: float) -> dict[str, object]:
    kid = jwt.get_unverified_header(token)["kid"]
    published = [k for k in keys if k["kid"] == kid]
    if not published:
        raise jwt.InvalidTokenError(f"kid {kid} is not published")
    found: dict[str, object] = jwt.decode(  # the clock here is the test's `now`, checked below
        token,
        jwt.PyJWK(published[0]),
        algorithms=["RS256"],
        audience="sts.amazonaws.com",
        options={"verify_exp": False},
    )
    assert int(found["exp"]) > now  # type: ignore[call-overload]
    return found


def _signing(ring: KeyRing, now: float) -> SigningKey:
    found = ring.signing(now)
    assert found is not None
    return found


def test_a_rotated_key_keeps_verifying_through_the_overlap_and_not_after(tmp_path: Path) -> None:
    ring = KeyRing(tmp_path / "keys")
    t0 = 1_700_000_000
    first = ring.ensure(t0)
    assert ring.ensure(t0 + 5).path == first.path  # made once
    assert (tmp_path / "keys").stat().st_mode & 0o777 == 0o700 and first.path.stat().st_mode & 0o777 == 0o600
    old_token = sign(first, _claims(now=t0 + 100, lifetime_seconds=3600))
    assert _verify(old_token, jwks(ring.published(t0 + 100))["keys"], t0 + 100)["phase"] == "plan"

    t1 = t0 + 10_000
    second = ring.rotate(t1)
    assert _signing(ring, t1).path == first.path  # the new key is published before it signs
    assert {k.kid for k in ring.published(t1)} == {first.kid, second.kid}
    late_old = sign(
        _signing(ring, t1 + ACTIVATE_AFTER - 1), _claims(now=t1 + ACTIVATE_AFTER - 1, lifetime_seconds=3600)
    )
    assert _signing(ring, t1 + ACTIVATE_AFTER).path == second.path
    last_moment = t1 + ACTIVATE_AFTER + 3600 - 2  # the old key's last token is about to expire
    assert _verify(late_old, jwks(ring.published(last_moment))["keys"], last_moment)["phase"] == "plan"
    assert len(ring.published(t1 + ACTIVATE_AFTER + OVERLAP - 1)) == 2
    after = t1 + ACTIVATE_AFTER + OVERLAP
    assert [k.kid for k in ring.published(after)] == [second.kid]
    with pytest.raises(jwt.InvalidTokenError, match="not published"):
        _verify(late_old, jwks(ring.published(after))["keys"], after)
    third = ring.rotate(after + 1)
    assert not first.path.exists() and second.path.exists() and third.path.exists()  # the retired file is gone


def test_every_jwt_is_masked_by_the_backstop() -> None:
    ring_key = KeyRing(Path("/nonexistent"))
    assert ring_key.keys() == []
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJyZXBvOmEvYiJ9.c2lnbmF0dXJlLWJ5dGVzLWhlcmUtMTIzNDU2"
    assert token not in Backstop()(f"plugin said: {token}!") and "plugin said: " in Backstop()(f"plugin said: {token}")


def test_the_issuer_routes_serve_discovery_and_keys_and_404_when_off(tmp_path: Path) -> None:
    app = Starlette(routes=routes)
    app.state.settings = SimpleNamespace(oidc=None)
    with TestClient(app) as client:
        assert client.get("/.well-known/openid-configuration").status_code == 404
        assert client.get("/.well-known/jwks").status_code == 404
    on = oidc_settings.load({"PLANGATE_OIDC_KEY_DIR": str(tmp_path / "k"), "PLANGATE_PUBLIC_URL": "https://p.example"})
    app.state.settings = SimpleNamespace(oidc=on)
    key = KeyRing(tmp_path / "k").ensure(1_700_000_000)
    with TestClient(app) as client:
        found = client.get("/.well-known/openid-configuration")
        assert found.json()["issuer"] == "https://p.example" and "max-age" in found.headers["cache-control"]
        (jwk,) = client.get("/.well-known/jwks").json()["keys"]
        assert jwk["kid"] == key.kid and jwk["alg"] == "RS256" and "d" not in jwk  # the public half only
