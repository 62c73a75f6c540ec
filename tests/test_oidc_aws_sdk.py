"""The token file and environment a step gets, read by the AWS SDK itself: botocore finds
AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, calls STS AssumeRoleWithWebIdentity, and acts as the role.

STS is moto's server (the package registries have no real AWS): it checks the request's shape, not the
token's signature, so the signature and claims are checked by the other OIDC tests, with PyJWT against the
served key set. What this shows is that what plangate writes is what the SDK reads, in a process that has
nothing but that environment (as terraform in its sandbox has nothing else).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from moto.server import ThreadedMotoServer

from core.config_credentials import AwsCredentials, Credentials
from plumbing.oidc_keys import KeyRing
from standin.local_redis import free_port
from workers.adapters.terraform.oidc_tokens import Grant

CALLER = "import boto3; print(boto3.client('sts').get_caller_identity()['Arn'])"


@pytest.fixture
def sts() -> Iterator[str]:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def test_the_aws_sdk_assumes_the_phases_role_with_the_token_file(tmp_path: Path, sts: str) -> None:
    keys = KeyRing(tmp_path / "keys")
    keys.ensure(0)
    credentials = Credentials(
        aws=AwsCredentials(
            plan_role="arn:aws:iam::123456789012:role/plangate-plan",
            apply_role="arn:aws:iam::123456789012:role/plangate-apply",
        )
    )
    for phase, role in (("plan", "plangate-plan"), ("apply", "plangate-apply")):
        grant = Grant(
            keys, "https://plangate.example", credentials, phase, "acme/infra", 7, "net", "default", "a" * 40, tmp_path
        )
        with grant.step(600) as (env, shown):
            assert shown is not None and Path(env["AWS_WEB_IDENTITY_TOKEN_FILE"]).parent == shown
            sdk_env = {**env, "AWS_ENDPOINT_URL_STS": sts, "AWS_DEFAULT_REGION": "us-east-1", "HOME": str(tmp_path)}
            done = subprocess.run([sys.executable, "-c", CALLER], env=sdk_env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"arn:aws:sts::123456789012:assumed-role/{role}/plangate-net-{phase}"
        assert not shown.exists()  # the step's token is gone with it
