"""Settings: the three private-key encodings, and one clear line + exit 2 per bad setting."""

from __future__ import annotations

import base64
import os
import re
import select
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from core.sandbox_paths import Grant, SandboxPaths
from core.status_settings import StatusAuth
from plumbing import settings
from plumbing.setting_values import SettingsError
from tests.keys import ec_pem, rsa_pem


def test_private_key_encodings_all_load(tmp_path: Path) -> None:
    pem = rsa_pem()
    escaped = pem.strip().replace("\n", "\\n")
    b64 = base64.b64encode(pem.encode()).decode()
    path = tmp_path / "key.pem"
    path.write_text(pem)
    for env in (
        {"GITHUB_APP_PRIVATE_KEY": pem},
        {"GITHUB_APP_PRIVATE_KEY": escaped},
        {"GITHUB_APP_PRIVATE_KEY": b64},
        {"GITHUB_APP_PRIVATE_KEY": "\n".join(b64[i : i + 76] for i in range(0, len(b64), 76))},
        {"GITHUB_APP_PRIVATE_KEY_PATH": str(path)},
    ):
        loaded = settings.load({"GITHUB_APP_ID": "123", **env}, need_app=True)
        assert loaded.private_key is not None and loaded.private_key.strip() == pem.strip()
        assert "PRIVATE KEY" not in repr(loaded)


def test_defaults() -> None:
    loaded = settings.load({})
    assert loaded.api_url == "https://api.github.com"
    assert loaded.redis_url == "redis://127.0.0.1:6379/0"
    assert loaded.tf_env == ()
    assert loaded.log_level == "info" and settings.load({"PLANGATE_LOG_LEVEL": "warning"}).log_level == "warning"
    assert loaded.tf_cgroup == "auto" and settings.load({"PLANGATE_TF_CGROUP": " off "}).tf_cgroup == "off"
    assert settings.load({"PLANGATE_TF_CGROUP": "/sys/fs/cgroup/plangate"}).tf_cgroup == "/sys/fs/cgroup/plangate"
    assert loaded.max_projects == 500 and settings.load({"PLANGATE_MAX_PROJECTS": " 40 "}).max_projects == 40
    assert loaded.public_url is None and settings.load({"PLANGATE_PUBLIC_URL": " "}).public_url is None
    for given, kept in [
        ("https://gate.example.org/plangate/", "https://gate.example.org/plangate"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://[::1]:8443/", "https://[::1]:8443"),
    ]:
        assert settings.load({"PLANGATE_PUBLIC_URL": given}).public_url == kept
    ghes = settings.load({"GITHUB_API_URL": "https://ghe.example.com/api/v3/"})
    assert ghes.api_url == "https://ghe.example.com/api/v3"
    assert loaded.public_url is None and settings.load({"PLANGATE_PUBLIC_URL": " "}).public_url is None
    assert (
        settings.load({"PLANGATE_PUBLIC_URL": "https://gate.example.org/pg/"}).public_url
        == "https://gate.example.org/pg"
    )


BAD = [
    ({"GITHUB_APP_ID": "abc"}, "GITHUB_APP_ID"),
    ({"GITHUB_APP_PRIVATE_KEY": "not a key"}, "GITHUB_APP_PRIVATE_KEY"),
    ({"GITHUB_APP_PRIVATE_KEY": base64.b64encode(b"hello").decode()}, "GITHUB_APP_PRIVATE_KEY"),
    ({"GITHUB_APP_PRIVATE_KEY_PATH": "/nonexistent/key.pem"}, "GITHUB_APP_PRIVATE_KEY_PATH"),
    ({"GITHUB_API_URL": "api.github.com"}, "GITHUB_API_URL"),
    ({"REDIS_URL": "http://localhost"}, "REDIS_URL"),
    ({"PLANGATE_TF_ENV": "AWS_*,bad name"}, "PLANGATE_TF_ENV"),
    ({"PLANGATE_TF_TIMEOUT": "soon"}, "PLANGATE_TF_TIMEOUT"),
    ({"PLANGATE_TF_MEMORY_MB": "-1"}, "PLANGATE_TF_MEMORY_MB"),
    ({"PLANGATE_TF_CGROUP": "sys/fs/cgroup"}, "PLANGATE_TF_CGROUP"),
    ({"PLANGATE_MASK_PATTERNS": "([unclosed"}, "PLANGATE_MASK_PATTERNS"),
    ({"PLANGATE_DRIFT_SCHEDULE": "61 * * * *"}, "PLANGATE_DRIFT_SCHEDULE"),
    ({"PLANGATE_STATUS_PUBLIC": "maybe"}, "PLANGATE_STATUS_PUBLIC"),
    ({"PLANGATE_LOG_LEVEL": "verbose"}, "PLANGATE_LOG_LEVEL"),
    ({"PLANGATE_MAX_PROJECTS": "0"}, "PLANGATE_MAX_PROJECTS"),
    ({"PLANGATE_PUBLIC_URL": "gate.example.org"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_PUBLIC_URL": "javascript:alert(1)"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_MAX_PROJECTS": "2.5"}, "PLANGATE_MAX_PROJECTS"),
    ({"PLANGATE_MAX_PROJECTS": "\u00b2"}, "PLANGATE_MAX_PROJECTS"),
    ({"PLANGATE_STATUS_TOKEN": "too-short"}, "PLANGATE_STATUS_TOKEN"),
    ({"PLANGATE_PUBLIC_URL": "gate.example.org"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_PUBLIC_URL": "ftp://gate.example.org"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_PUBLIC_URL": "https://gate.example.org/a)b"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_PUBLIC_URL": "https://gate.example.org/x y"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_PUBLIC_URL": "https://gate.example.org/?next=1"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_PUBLIC_URL": "https://user:pw@gate.example.org"}, "PLANGATE_PUBLIC_URL"),
    ({"PLANGATE_STATUS_TOKEN": "has a space in the middle"}, "PLANGATE_STATUS_TOKEN"),
    ({"PLANGATE_STATUS_TOKEN_PATH": "/nonexistent/token"}, "PLANGATE_STATUS_TOKEN_PATH"),
    ({"GITHUB_APP_ID": "1", "GITHUB_CLIENT_ID": "Iv1.abc"}, "GITHUB_CLIENT_SECRET"),
    ({"GITHUB_CLIENT_SECRET": "s3cret"}, "GITHUB_CLIENT_ID"),
    ({"GITHUB_APP_ID": "1", "GITHUB_CLIENT_ID": "not an id", "GITHUB_CLIENT_SECRET": "s"}, "GITHUB_CLIENT_ID"),
    ({"GITHUB_CLIENT_ID": "Iv1.abc", "GITHUB_CLIENT_SECRET": "s3cret"}, "GITHUB_APP_ID"),
    ({"GITHUB_CLIENT_ID": "Iv1.abc", "GITHUB_CLIENT_SECRET_PATH": "/nonexistent/secret"}, "GITHUB_CLIENT_SECRET_PATH"),
]


@pytest.mark.parametrize(("env", "name"), BAD)
def test_each_bad_setting_names_itself(env: dict[str, str], name: str) -> None:
    with pytest.raises(SettingsError) as err:
        settings.load(env)
    assert err.value.name == name
    assert str(err.value).startswith(f"setting {name}: ")


def test_status_access_settings(tmp_path: Path) -> None:
    assert settings.load({}).status_auth == StatusAuth()  # closed unless a setting opens it
    token_file, secret_file = tmp_path / "token", tmp_path / "secret"
    token_file.write_text("t0ken-from-a-file-0123456789\n")
    secret_file.write_text("client-secret-from-a-file\n")
    env = {
        "GITHUB_APP_ID": "7",
        "PLANGATE_STATUS_PUBLIC": "False",
        "PLANGATE_STATUS_TOKEN_PATH": str(token_file),
        "GITHUB_CLIENT_ID": "Iv1.0123abcd",
        "GITHUB_CLIENT_SECRET_PATH": str(secret_file),
    }
    loaded = settings.load(env).status_auth
    assert (loaded.public, loaded.token, loaded.client_id) == (False, "t0ken-from-a-file-0123456789", "Iv1.0123abcd")
    assert loaded.client_secret == "client-secret-from-a-file" and loaded.sign_in
    for shown in (repr(loaded), repr(settings.load(env)), str(loaded)):
        assert "t0ken" not in shown and "client-secret" not in shown
    direct = settings.load({**env, "PLANGATE_STATUS_TOKEN": "direct-token-wins-0123", "PLANGATE_STATUS_PUBLIC": "true"})
    assert direct.status_auth.token == "direct-token-wins-0123" and direct.status_auth.public


def test_ec_key_is_refused() -> None:
    with pytest.raises(SettingsError, match="RSA"):
        settings.load({"GITHUB_APP_PRIVATE_KEY": ec_pem()})


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [sys.executable, "-m", "plangate", *args], env={**base, **env}, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "env", "name"),
    [
        (["web"], {"GITHUB_APP_ID": "1"}, "GITHUB_WEBHOOK_SECRET"),
        (["worker", "--burst"], {}, "GITHUB_APP_ID"),
        (["worker", "--burst"], {"GITHUB_APP_ID": "1"}, "GITHUB_APP_PRIVATE_KEY"),
        *[(["web"], {"GITHUB_WEBHOOK_SECRET": "s", **env}, name) for env, name in BAD],
    ],
)
def test_processes_exit_2_with_one_line(args: list[str], env: dict[str, str], name: str) -> None:
    result = _run(args, env)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"plangate: setting {name}: "), result.stderr
    if "GITHUB_APP_PRIVATE_KEY" in env:
        assert env["GITHUB_APP_PRIVATE_KEY"] not in result.stderr


@pytest.mark.slow
def test_unconfigured_web_serves_only_the_setup_flow(tmp_path: Path) -> None:
    import httpx

    from standin.local_redis import free_port
    from standin.stack import wait_http

    port = free_port()
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PLANGATE_ENV_FILE": str(tmp_path / ".env")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "plangate", "web", "--host", "127.0.0.1", "--port", str(port)],
        env=base,
        stderr=subprocess.PIPE,
    )
    logged = b""
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz")
        assert proc.stderr is not None
        while not re.search(rb"setup code: .*\n", logged):  # logged as the server starts, before it answers
            assert select.select([proc.stderr], [], [], 10)[0], logged
            logged += os.read(proc.stderr.fileno(), 4096)
        line = re.search(r".* setup code: .*", logged.decode())
        assert line and re.search(r" plangate\.setup WARNING setup code: [A-Z2-9]{4}(-[A-Z2-9]{4}){4} \(", line[0])
        code = line[0].split("setup code: ")[1].split()[0]
        assert httpx.get(f"http://127.0.0.1:{port}/setup").status_code == 403
        assert httpx.post(f"http://127.0.0.1:{port}/setup", data={"code": code}).status_code == 200
        assert httpx.post(f"http://127.0.0.1:{port}/webhook", content=b"{}").status_code == 404
    finally:
        proc.terminate()
        _, rest = proc.communicate(timeout=20)
    err = (logged + rest).decode()
    assert "no GitHub App configured" in err
    assert err.count(code) == 1, "the code is logged once, and the rest of the log never repeats it"


def test_secrets_can_come_from_files_and_leave_the_environment(tmp_path: Path) -> None:
    (tmp_path / "hook").write_text("hook-secret\n")
    (tmp_path / "redis").write_text("p@ss/word\n")
    loaded = settings.load(
        {
            "GITHUB_WEBHOOK_SECRET_PATH": str(tmp_path / "hook"),
            "REDIS_PASSWORD_PATH": str(tmp_path / "redis"),
            "REDIS_URL": "redis://redis:6379/0",
        }
    )
    assert loaded.webhook_secret == "hook-secret"
    assert loaded.redis_url == "redis://:p%40ss%2Fword@redis:6379/0" and loaded.redis_password == "p@ss/word"
    assert set(loaded.secrets) == {"hook-secret", "p@ss/word"}
    assert loaded.secret_files == (
        ("GITHUB_WEBHOOK_SECRET_PATH", tmp_path / "hook"),
        ("REDIS_PASSWORD_PATH", tmp_path / "redis"),
    )
    unix = settings.load({"REDIS_URL": "unix:///run/redis.sock", "REDIS_PASSWORD": "pw"})
    assert unix.redis_url == "unix:///run/redis.sock?password=pw"
    environ = {"GITHUB_APP_PRIVATE_KEY": "k", "REDIS_URL": "u", "AWS_REGION": "eu", "PLANGATE_STATUS_TOKEN": "t"}
    settings.forget_secrets(environ)
    assert environ == {"AWS_REGION": "eu"}


def test_a_worker_needs_a_redis_password_unless_on_a_socket() -> None:
    with pytest.raises(SettingsError, match="has no password") as err:
        settings.load({"REDIS_URL": "redis://127.0.0.1:6379/0"}, need_redis_password=True)
    assert err.value.name == "REDIS_URL"
    settings.load({"REDIS_URL": "redis://:pw@127.0.0.1:6379/0"}, need_redis_password=True)
    settings.load({"REDIS_URL": "unix:///run/redis.sock"}, need_redis_password=True)


def test_sandbox_and_phase_settings() -> None:
    loaded = settings.load(
        {
            "PLANGATE_SANDBOX_PATHS": "/srv/state:rw,/etc/aws",
            "PLANGATE_SANDBOX_PATHS_PLAN": " /srv/scratch:rw, /srv/cache:ro ",
            "PLANGATE_SANDBOX_PATHS_APPLY": "/srv/deploy:rw",
            "PLANGATE_TF_ENV_PLAN": "AWS_RO_*",
            "PLANGATE_TF_ENV_APPLY": "AWS_RW_*, TF_VAR_x",
        }
    )
    assert loaded.sandbox == "bwrap" and loaded.sandbox_paths == SandboxPaths(
        common=(Grant(Path("/srv/state"), writable=True), Grant(Path("/etc/aws"))),
        plan=(Grant(Path("/srv/scratch"), writable=True), Grant(Path("/srv/cache"))),
        apply=(Grant(Path("/srv/deploy"), writable=True),),
    )
    assert settings.load({}).sandbox_paths == SandboxPaths()
    assert loaded.tf_env_plan == ("AWS_RO_*",) and loaded.tf_env_apply == ("AWS_RW_*", "TF_VAR_x")
    for env, name in (
        ({"PLANGATE_SANDBOX": "docker"}, "PLANGATE_SANDBOX"),
        ({"PLANGATE_TF_ENV_APPLY": "bad name"}, "PLANGATE_TF_ENV_APPLY"),
    ):
        with pytest.raises(SettingsError) as err:
            settings.load(env)
        assert err.value.name == name


@pytest.mark.parametrize(
    "name", ["PLANGATE_SANDBOX_PATHS", "PLANGATE_SANDBOX_PATHS_PLAN", "PLANGATE_SANDBOX_PATHS_APPLY"]
)
def test_each_sandbox_paths_setting_is_named_in_its_errors(name: str) -> None:
    for value, problem in (("/ok, relative:rw", "'relative:rw' is not an absolute path"), ("/a:b", "only :rw or :ro")):
        others = {other: "/fine:rw" for other in ("PLANGATE_SANDBOX_PATHS", "PLANGATE_SANDBOX_PATHS_PLAN")}
        with pytest.raises(SettingsError) as err:
            settings.load({**others, name: value})
        assert err.value.name == name and str(err.value).startswith(f"setting {name}: ") and problem in str(err.value)


class _Recorder(Mapping[str, str]):
    """An empty environment that remembers every name it was asked for."""

    def __init__(self) -> None:
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.asked.add(key)
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def test_every_file_a_secret_is_read_from_is_one_the_worker_keeps_out_of_the_sandbox(tmp_path: Path) -> None:
    recorder = _Recorder()
    settings.load(recorder)
    read_from_files = {name for name in recorder.asked if name.endswith("_PATH")}
    assert read_from_files <= set(settings.SECRET_FILE_SETTINGS)  # a new *_PATH secret is checked unlisted
    assert set(settings.SECRET_FILE_SETTINGS) == {
        "GITHUB_APP_PRIVATE_KEY_PATH",
        "GITHUB_WEBHOOK_SECRET_PATH",
        "REDIS_PASSWORD_PATH",
        "REDIS_SENTINEL_PASSWORD_PATH",
        "GITHUB_CLIENT_SECRET_PATH",
        "PLANGATE_STATUS_TOKEN_PATH",
        "PLANGATE_ENV_FILE",
        "PLANGATE_OIDC_KEY_DIR",
    }
    files = {name: tmp_path / name.lower() for name in settings.SECRET_FILE_SETTINGS}
    for path in files.values():
        path.write_text("0123456789abcdef0123456789abcdef\n")
    files["GITHUB_APP_PRIVATE_KEY_PATH"].write_text(rsa_pem())
    env = {name: str(path) for name, path in files.items()}
    sentinel = {"REDIS_URL": "redis+sentinel://sentinel-0/mymaster"}  # where a sentinel password belongs
    issuer = {"PLANGATE_PUBLIC_URL": "https://plangate.example"}  # the OIDC key directory needs an issuer
    loaded = settings.load({**env, **sentinel, **issuer, "GITHUB_APP_ID": "1", "GITHUB_CLIENT_ID": "Iv1.abc"})
    assert dict(loaded.secret_files) == files


def test_a_bad_redis_url_never_echoes_its_password() -> None:
    with pytest.raises(SettingsError) as err:
        settings.load({"REDIS_URL": "http://:hunter2hunter2@redis:6379"})
    assert "hunter2" not in str(err.value)


def test_a_bad_public_url_never_echoes_its_user_part() -> None:
    with pytest.raises(SettingsError) as err:
        settings.load({"PLANGATE_PUBLIC_URL": "https://admin:hunter2@gate.example.org"})
    assert "hunter2" not in str(err.value) and "gate.example.org" in str(err.value)
