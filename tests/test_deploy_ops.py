"""deploy/ under operations: evictions, shutdowns, Redis persistence, Redis elsewhere than in the cluster.

The grace periods are checked against the apply job's timeout as plumbing/job_options.py sets it (the job is
enqueued on a real Redis and read back), so a longer job cannot leave them short; the overlays for a
managed Redis over TLS and for Redis Sentinel are rendered and loaded as each process loads them, and
KEDA's triggers must name the same Redis the same way; every file a comment in deploy/ names exists.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import redis
from rq.job import Job

from core.contract import QUEUE_NAMES, ApplyConversation, PushRequest
from core.projects import Project
from plumbing import redis_url as urls
from tests.test_deploy import (
    BASE,
    CRD_KINDS,
    DEPLOY,
    NEEDS,
    REDIS_PASSWORD,
    ROOT,
    Doc,
    Peer,
    _base,
    _command,
    _compose,
    _compose_filled,
    _filled_secrets,
    _interpolate,
    _load,
    _one,
    _plangate_containers,
    _pod_env,
    _reachable,
    _render,
    _setting_names,
    _validate,
)
from tests.test_readme import SETTING, _documented_settings
from workers.adapters.queue import fanout

pytestmark = pytest.mark.slow

OVERLAYS = DEPLOY / "k8s" / "overlays"
SHUTDOWN_MARGIN = 60  # seconds for a worker to wind down once its last job has ended
PODS = ("plangate-web", "plangate-worker", "plangate-cron")


def _apply_timeout(conn: redis.Redis, tf_timeout: float) -> int:
    """The RQ timeout of one project's apply job, as the worker enqueues it after a merge."""
    push = PushRequest(1, 2, "acme/infra", "https://github.com/acme/infra.git", "main", "a" * 40, "b" * 40)
    where = ApplyConversation(number=1, is_pr=True, authors=(), approved_on=None)
    (job_id,) = fanout.enqueue_applies(conn, push, [Project(name="infra", dir=".")], where, tf_timeout)
    timeout = Job.fetch(job_id, connection=conn).timeout
    assert timeout is not None
    return int(timeout)


def _seconds(duration: str) -> int:
    """A compose duration such as `2h35m` or `90s`."""
    match = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert match and duration, duration
    hours, minutes, seconds = (int(part or 0) for part in match.groups())
    return hours * 3600 + minutes * 60 + seconds


def test_the_worker_grace_periods_outlast_an_apply_job(redis_conn: redis.Redis) -> None:
    config = _one(_base(), "ConfigMap", "plangate-config")["data"]
    pod = _one(_base(), "Deployment", "plangate-worker")["spec"]["template"]["spec"]
    needed = _apply_timeout(redis_conn, float(config["PLANGATE_TF_TIMEOUT"])) + SHUTDOWN_MARGIN
    assert pod["terminationGracePeriodSeconds"] >= needed
    worker = _interpolate(_compose()["services"]["worker"], _compose_filled())
    needed = _apply_timeout(redis_conn, float(worker["environment"]["PLANGATE_TF_TIMEOUT"])) + SHUTDOWN_MARGIN
    assert _seconds(worker["stop_grace_period"]) >= needed


def test_the_apply_timeout_read_here_follows_the_setting(redis_conn: redis.Redis) -> None:
    """The check above moves with PLANGATE_TF_TIMEOUT, and covers at least the four terraform steps."""
    assert _apply_timeout(redis_conn, 3600) > _apply_timeout(redis_conn, 1800) >= 4 * 1800


def test_evictions_leave_a_web_pod_and_never_block_a_drain() -> None:
    docs = _base()
    budgets = {d["metadata"]["name"]: d["spec"] for d in docs if d["kind"] == "PodDisruptionBudget"}
    assert set(budgets) == {"plangate-web", "plangate-worker"}
    for doc in docs:
        if doc["kind"] not in ("Deployment", "StatefulSet"):
            continue
        labels = doc["spec"]["template"]["metadata"]["labels"]
        chosen = [b for b in budgets.values() if b["selector"]["matchLabels"].items() <= labels.items()]
        if not chosen:
            continue
        (budget,) = chosen
        # A budget that allows no eviction of a pod (one replica, minAvailable 1) blocks drains for good.
        if "minAvailable" in budget:
            assert doc["spec"]["replicas"] > budget["minAvailable"], doc["metadata"]["name"]
        else:
            assert budget["maxUnavailable"] >= 1, doc["metadata"]["name"]
    assert budgets["plangate-web"]["minAvailable"] >= 1, "a drain keeps one web pod accepting webhooks"


def test_redis_fsyncs_every_write_before_answering() -> None:
    """`everysec` loses up to a second of writes already acknowledged when the host crashes."""
    pod = _one(_base(), "StatefulSet", "plangate-redis")["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[args.index("--appendfsync") + 1] == "always"
    command = _compose()["services"]["redis"]["command"]
    assert command[command.index("--appendfsync") + 1] == "always"


# --- Redis elsewhere: a managed endpoint over TLS, Redis Sentinel -------------------------------------


@pytest.mark.parametrize("overlay", ["managed-redis", "sentinel"])
def test_an_overlay_renders_valid_manifests_without_the_in_cluster_redis(overlay: str) -> None:
    docs = _render(str(OVERLAYS / overlay))
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) not in CRD_KINDS:
            _validate(doc)
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    gone = {("StatefulSet", "plangate-redis"), ("Service", "plangate-redis"), ("NetworkPolicy", "plangate-redis")}
    assert not names & gone
    assert not [name for kind, name in names if kind == "ConfigMap" and name.startswith("plangate-redis-scripts")]
    assert set(_one(docs, "ConfigMap", "plangate-config")["data"]) <= _setting_names()


def _loaded(docs: tuple[Doc, ...], tmp_path: Path) -> dict[str, str]:
    """Each process's REDIS_URL as it loads it from the rendered manifests and the filled Secrets."""
    found = {}
    for doc, container in _plangate_containers(docs):
        command = _command(container)
        env = _pod_env(doc["spec"]["template"]["spec"], container, docs, _filled_secrets(), tmp_path / command)
        found[command] = _load(env, **NEEDS[command]).redis_url
    return found


def _auth(docs: tuple[Doc, ...], trigger: Doc) -> dict[str, tuple[str, str]]:
    auth = _one(docs, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    return {ref["parameter"]: (ref["name"], ref["key"]) for ref in auth["spec"]["secretTargetRef"]}


@pytest.mark.parametrize("directory", [BASE, OVERLAYS / "example", OVERLAYS / "managed-redis", OVERLAYS / "sentinel"])
def test_keda_watches_the_redis_the_processes_use(directory: Path, tmp_path: Path) -> None:
    """Same server (or sentinels and master set), same database, TLS exactly when the clients use it,
    the same password from the same Secret key, and RQ's lists of plangate's queues."""
    docs = _render(str(directory))
    loaded = set(_loaded(docs, tmp_path).values())
    (url,) = loaded  # web, worker and cron use one Redis
    scaled = _one(docs, "ScaledObject", "plangate-worker")
    namespace = scaled["metadata"]["namespace"]
    triggers = scaled["spec"]["triggers"]
    assert sorted(t["metadata"]["listName"] for t in triggers) == sorted(f"rq:queue:{q}" for q in QUEUE_NAMES)
    for trigger in triggers:
        meta = trigger["metadata"]
        assert not {"password", "passwordFromEnv", "sentinelPassword", "sentinelPasswordFromEnv"} & set(meta)
        auth = _auth(docs, trigger)
        if urls.is_sentinel(url):
            where = urls.parse_sentinel(url)
            assert trigger["type"] == "redis-sentinel"
            assert [a.strip() for a in meta["addresses"].split(",")] == [f"{h}:{p}" for h, p in where.sentinels]
            assert (meta["sentinelMaster"], int(meta["databaseIndex"])) == (where.service, where.db)
            assert where.sentinel_password == REDIS_PASSWORD and auth["sentinelPassword"] == (
                "plangate-redis",
                "password",
            )
        else:
            parts = urlsplit(url)
            assert trigger["type"] == "redis"
            host, _, port = meta["address"].rpartition(":")
            assert (
                host in (parts.hostname, f"{parts.hostname}.{namespace}.svc.cluster.local") and int(port) == parts.port
            )
            assert int(meta["databaseIndex"]) == int(parts.path.strip("/"))
            assert (meta.get("enableTLS", "false") == "true") == (parts.scheme == "rediss")
        assert urls.password(url) == REDIS_PASSWORD and auth["password"] == ("plangate-redis", "password")


def test_the_processes_reach_the_managed_redis_and_still_nothing_private_else() -> None:
    docs = _render(str(OVERLAYS / "managed-redis"))
    port = urlsplit(_one(docs, "ConfigMap", "plangate-config")["data"]["REDIS_URL"]).port
    for pod in PODS:
        assert _reachable(docs, pod, Peer("10.30.0.12", port or 0))
        assert not _reachable(docs, pod, Peer("10.30.0.12", 22))
        assert not _reachable(docs, pod, Peer("10.31.0.12", port or 0))
        assert not _reachable(docs, pod, Peer("169.254.169.254", 80))


def test_the_processes_reach_the_sentinels_and_the_nodes_they_name() -> None:
    docs = _render(str(OVERLAYS / "sentinel"))
    node = {"app.kubernetes.io/name": "redis", "app.kubernetes.io/instance": "redis"}
    for pod in PODS:
        for port in (urls.SENTINEL_PORT, 6379):
            assert _reachable(docs, pod, Peer("10.244.7.3", port, namespace="redis", labels=node)), (pod, port)
            assert not _reachable(docs, pod, Peer("10.244.7.3", port, namespace="tenant", labels=node)), (pod, port)
        assert not _reachable(docs, pod, Peer("10.244.7.3", 22, namespace="redis", labels=node))


# --- What the comments point at -------------------------------------------------------------------

# A file name as comments write it: a path relative to the commented file's directory or one above it.
_NAMED_FILE = re.compile(r"(?<![\w/.:*$-])((?:[\w.-]+/)*[\w.-]*\.(?:py|ya?ml|sh|md|toml|json|env|example))\b")


def _comment_paths() -> list[tuple[Path, int, str]]:
    """(file, line, path) for every file name in a comment of a text file under deploy/."""
    found = []
    for path in sorted(p for p in DEPLOY.rglob("*") if p.is_file()):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            comment = re.search(r"(?:^|\s)#(.*)$", line)
            if comment:
                text = re.sub(r"https?://\S+", "", comment[1])
                found += [(path, number, name) for name in _NAMED_FILE.findall(text)]
    return found


def _points_somewhere(path: Path, name: str) -> bool:
    """It exists next to the commented file or above it, or it is a file git ignores (one the operator
    creates, as `.env`)."""
    candidates = [
        directory / name for directory in (path.parent, *path.parent.parents) if ROOT in (directory, *directory.parents)
    ]
    if any(c.exists() for c in candidates):
        return True
    return any(subprocess.run(["git", "check-ignore", "-q", str(c)], cwd=ROOT).returncode == 0 for c in candidates)


def test_every_file_a_deploy_comment_names_exists() -> None:
    named = _comment_paths()
    assert len(named) > 40, "the scan finds the comments' file names"
    missing = [f"{p.relative_to(ROOT)}:{n}: {name}" for p, n, name in named if not _points_somewhere(p, name)]
    assert missing == []


def test_the_comment_scan_catches_a_file_that_is_gone() -> None:
    """A path that was right once (the settings were bot/settings.py) is reported."""
    assert _points_somewhere(BASE / "configmap.yaml", "plumbing/settings.py")
    assert not _points_somewhere(BASE / "configmap.yaml", "bot/settings.py")
    assert not _points_somewhere(BASE / "configmap.yaml", "DESIGN.md")


def test_the_deployment_doc_names_real_settings_files_and_the_shipped_grace_periods() -> None:
    text = (ROOT / "docs" / "deployment.md").read_text()
    named = set(SETTING.findall(text))
    assert named and named <= _documented_settings(), named - _documented_settings()
    paths = re.findall(r"`((?:deploy|workers|tests|benchmarks|core)/[\w./-]+)`", text)
    assert paths and [p for p in paths if not (ROOT / p).exists()] == []
    pod = _one(_base(), "Deployment", "plangate-worker")["spec"]["template"]["spec"]
    assert f"{pod['terminationGracePeriodSeconds']} s" in text
    assert f"`{_compose()['services']['worker']['stop_grace_period']}`" in text
