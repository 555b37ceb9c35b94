"""Deployment artefacts: docker-compose, the worker image, Prometheus, Grafana and Kubernetes.

Everything here is offline and fast: files are parsed, nothing is built, started or fetched.

* Kubernetes manifests of built-in kinds are validated, strictly (unknown fields fail),
  against the JSON schemas bundled with `kubernetes-validate`; the custom resources of the
  Prometheus Operator and KEDA are checked structurally (the fields their CRDs require).
* PromQL (dashboard panels, alert rules) is parsed with `promql-parser`; every metric it
  selects must be one that `neardup_stream.worker.metrics.build_metrics` registers.
* The NEARDUP_* environment of compose and Kubernetes must name real settings and validate as
  `neardup_stream.worker.settings.Settings`; ports, topics, partitions and names must agree across
  the files and with the settings' defaults.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import promql_parser
import pytest
import yaml
from prometheus_client import CollectorRegistry
from pydantic import BaseModel

from neardup_stream.worker.metrics import build_metrics
from neardup_stream.worker.settings import MetricsSettings, Settings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "worker" / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
GRAFANA_DIR = ROOT / "deploy" / "grafana"
DASHBOARD_FILE = GRAFANA_DIR / "dashboards" / "neardup.json"
K8S_DIR = ROOT / "deploy" / "k8s"

# Kubernetes versions the manifests must be valid for (schemas bundled by kubernetes-validate).
K8S_VERSIONS = ("1.30.0", "1.34.0")
CRD_GROUPS = ("monitoring.coreos.com", "keda.sh")
# Kubernetes / Prometheus duration, as in the Prometheus Operator CRDs.
DURATION = re.compile(r"^(0|(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?)$")
REQUIRED_ALERTS = {
    "NeardupConsumerLagGrowing",
    "NeardupDLQRate",
    "NeardupRestoreTooSlow",
    "NeardupTransactionAborts",
    "NeardupWorkerNotReady",
}
METRICS_PORT = MetricsSettings().port


# --- loading ------------------------------------------------------------------------------


def _yaml(path: Path) -> Any:
    with path.open() as f:
        return yaml.safe_load(f)


@cache
def compose() -> dict[str, Any]:
    return _yaml(COMPOSE_FILE)


def service(name: str) -> dict[str, Any]:
    return compose()["services"][name]


def env_of(svc: dict[str, Any]) -> dict[str, str]:
    """A compose service's environment (map or list form), values as strings."""
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: "" if v is None else str(v) for k, v in env.items()}


def interpolate(value: str) -> str:
    """Resolve compose `${VAR:-default}` / `${VAR-default}` to the default, as with no .env."""

    def default(m: re.Match[str]) -> str:
        assert m.group(2) is not None, f"{m.group(0)} has no default value"
        return m.group(2)

    return re.sub(r"\$\{(\w+)(?::?-([^}]*))?\}", default, value)


@cache
def k8s_documents() -> tuple[tuple[str, dict[str, Any]], ...]:
    """(file name, document) for every manifest in deploy/k8s except the kustomization."""
    docs = []
    for path in sorted(K8S_DIR.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        with path.open() as f:
            docs.extend((path.name, doc) for doc in yaml.safe_load_all(f) if doc)
    return tuple(docs)


def k8s_object(kind: str) -> dict[str, Any]:
    found = [doc for _, doc in k8s_documents() if doc["kind"] == kind]
    assert len(found) == 1, f"expected exactly one {kind} in deploy/k8s, found {len(found)}"
    return found[0]


def container() -> dict[str, Any]:
    containers = k8s_object("StatefulSet")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def configmap_data() -> dict[str, str]:
    return k8s_object("ConfigMap")["data"]


# --- Dockerfile -----------------------------------------------------------------------------


def dockerfile_instructions(path: Path = DOCKERFILE) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # comment lines inside a continued instruction are ignored by Docker
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        full = (pending + line).strip()
        pending = ""
        instruction, _, args = full.partition(" ")
        out.append((instruction.upper(), args.strip()))
    assert not pending, "Dockerfile ends inside a line continuation"
    return out


def dockerfile_stages() -> list[list[tuple[str, str]]]:
    """Instructions per stage; stage 0 holds the global ARGs before the first FROM."""
    stages: list[list[tuple[str, str]]] = [[]]
    for instruction, args in dockerfile_instructions():
        if instruction == "FROM":
            stages.append([])
        stages[-1].append((instruction, args))
    return stages


def parse_env_instruction(args: str) -> dict[str, str]:
    tokens = shlex.split(args)
    if len(tokens) >= 2 and "=" not in tokens[0]:
        return {tokens[0]: " ".join(tokens[1:])}  # legacy `ENV KEY value`
    return dict(token.split("=", 1) for token in tokens)


def exec_form(args: str) -> list[str]:
    value = json.loads(args)
    assert isinstance(value, list) and all(isinstance(v, str) for v in value), args
    return value


def test_dockerfile_is_multi_stage_on_python_311_slim() -> None:
    stages = dockerfile_stages()
    global_args = {}
    for instruction, args in stages[0]:
        assert instruction == "ARG", f"{instruction} before the first FROM"
        name, _, default = args.partition("=")
        global_args[name] = default
    froms = [stage[0][1].split() for stage in stages[1:]]
    assert len(froms) >= 2, "the worker image must be a multi-stage build"
    names = []
    for words in froms:
        image = re.sub(r"\$\{(\w+)\}", lambda m: global_args[m.group(1)], words[0])
        assert image == "python:3.11-slim", image
        assert len(words) == 3 and words[1].upper() == "AS", "name every stage"
        names.append(words[2])
    final = stages[-1]
    copied_from = [
        re.search(r"--from=(\S+)", args).group(1)  # type: ignore[union-attr]
        for instruction, args in final
        if instruction == "COPY" and "--from=" in args
    ]
    assert copied_from and set(copied_from) <= set(names[:-1]), "runtime copies from the builder"
    assert not any(i == "RUN" and "pip install" in a for i, a in final), "no builds at runtime"


def test_dockerfile_runtime_user_port_env_healthcheck_entrypoint() -> None:
    final = dockerfile_stages()[-1]
    users = [args for instruction, args in final if instruction == "USER"]
    assert users, "the runtime stage must switch to an unprivileged USER"
    user = users[-1].split(":")[0]
    assert user not in {"root", "0"}
    assert user.isdigit(), "a numeric USER lets Kubernetes verify runAsNonRoot"
    security = k8s_object("StatefulSet")["spec"]["template"]["spec"]["securityContext"]
    assert security["runAsUser"] == int(user)

    exposed = [int(p.split("/")[0]) for i, a in final if i == "EXPOSE" for p in a.split()]
    assert exposed == [METRICS_PORT]

    env: dict[str, str] = {}
    for instruction, args in final:
        if instruction == "ENV":
            env.update(parse_env_instruction(args))
    assert env["NEARDUP_METRICS__HOST"] == "0.0.0.0"
    assert int(env.get("NEARDUP_METRICS__PORT", METRICS_PORT)) == METRICS_PORT
    assert env["NUMBA_CACHE_DIR"].startswith("/tmp/"), "numba's cache must be writable"

    healthchecks = [args for instruction, args in final if instruction == "HEALTHCHECK"]
    assert len(healthchecks) == 1
    check = healthchecks[0]
    cmd = exec_form(check[check.index("CMD") + len("CMD") :].strip())
    assert cmd[:2] == ["python", "-c"]
    assert "/healthz" in cmd[2] and "urllib" in cmd[2]
    compile(cmd[2], "HEALTHCHECK", "exec")

    entrypoints = [exec_form(args) for instruction, args in final if instruction == "ENTRYPOINT"]
    assert entrypoints == [["neardup-stream", "worker"]]


def test_dockerfile_copies_exist_in_the_build_context() -> None:
    for stage in dockerfile_stages()[1:]:
        for instruction, args in stage:
            if instruction not in {"COPY", "ADD"} or "--from=" in args:
                continue
            *sources, _dest = [w for w in shlex.split(args) if not w.startswith("--")]
            for source in sources:
                assert (ROOT / source).exists(), f"COPY {source}: not in the repository root"
                assert source == "." or not dockerignored(source), f"{source} is dockerignored"


def _dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for raw in DOCKERIGNORE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").strip("/")
        regex = ""
        i = 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                regex, i = regex + "(?:.*/)?", i + 3
            elif pattern.startswith("**", i):
                regex, i = regex + ".*", i + 2
            elif pattern[i] == "*":
                regex, i = regex + "[^/]*", i + 1
            elif pattern[i] == "?":
                regex, i = regex + "[^/]", i + 1
            elif pattern[i] == "[":
                end = pattern.index("]", i)
                regex, i = regex + pattern[i : end + 1], end + 1
            else:
                regex, i = regex + re.escape(pattern[i]), i + 1
        patterns.append((negate, re.compile(regex + "(?:/.*)?")))
    return patterns


def dockerignored(path: str) -> bool:
    """Docker's .dockerignore semantics: the last matching pattern wins; dirs cover contents."""
    excluded = False
    for negate, regex in _dockerignore_patterns():
        if regex.fullmatch(path):
            excluded = not negate
    return excluded


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".venv/bin/python",
        "bench/data/corpus.jsonl",
        ".pytest_cache/x",
        ".mypy_cache/x",
        "neardup_stream/__pycache__/settings.cpython-311.pyc",
        ".hypothesis/x",
    ],
)
def test_dockerignore_excludes(path: str) -> None:
    assert dockerignored(path)


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "README.md",
        "neardup_stream/settings.py",
        "neardup_stream/py.typed",
        "neardup_stream/worker/main.py",
        "neardup_stream/worker/__main__.py",
    ],
)
def test_dockerignore_keeps_what_the_image_needs(path: str) -> None:
    assert not dockerignored(path)


# --- docker compose -------------------------------------------------------------------------


def created_topics() -> dict[str, dict[str, Any]]:
    """Topics created by topic-init's kafka-topics.sh calls: name -> partitions, configs."""
    command = service("topic-init")["command"]
    script = command if isinstance(command, str) else "\n".join(command)
    topics: dict[str, dict[str, Any]] = {}
    for line in script.replace("\\\n", " ").splitlines():
        if "kafka-topics.sh" not in line or "--create" not in line:
            continue
        words = shlex.split(line)
        opts: dict[str, Any] = {"configs": {}}
        for flag, value in zip(words, [*words[1:], None], strict=True):
            if flag == "--config":
                key, _, val = str(value).partition("=")
                opts["configs"][key] = val
            elif flag in {"--topic", "--partitions", "--bootstrap-server"}:
                opts[flag.lstrip("-")] = value
        topics[opts["topic"]] = opts
    assert topics, "topic-init creates no topics"
    return topics


def test_compose_has_the_services() -> None:
    assert {"kafka", "topic-init", "worker", "prometheus", "grafana"} <= set(compose()["services"])


def test_compose_worker_scales() -> None:
    worker = service("worker")
    assert "container_name" not in worker, "a fixed name prevents --scale"
    assert "ports" not in worker, "a published host port prevents --scale"
    assert str(METRICS_PORT) in [str(p) for p in worker["expose"]]
    build = worker["build"]
    assert (ROOT / build["context"]).resolve() == ROOT
    assert (ROOT / build["context"] / build["dockerfile"]).resolve() == DOCKERFILE
    limits = worker["deploy"]["resources"]["limits"]
    assert limits.get("cpus") and limits.get("memory")


def test_compose_worker_env_is_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {k: interpolate(v) for k, v in env_of(service("worker")).items()}
    settings = settings_from_env(monkeypatch, env)
    assert settings.metrics.host == "0.0.0.0"
    assert settings.metrics.port == METRICS_PORT
    assert "NEARDUP_WORKER__INSTANCE_ID" not in env, "compose replicas use their hostname"


def test_compose_worker_topics_match_topic_init() -> None:
    env = env_of(service("worker"))
    topics = created_topics()
    names = {key: env[f"NEARDUP_TOPICS__{key}"] for key in ("INPUT", "UNIQUE", "DUPLICATE", "DLQ")}
    assert set(names.values()) == set(topics), "the worker's topics are the ones created"
    # topic scope (the compose workers'): no partition-scope changelog to name or create
    assert "NEARDUP_TOPICS__CHANGELOG" not in env and "NEARDUP_WORKER__SCOPE" not in env
    partitions = int(topics[names["INPUT"]]["partitions"])
    assert int(env["NEARDUP_TOPICS__PARTITIONS"]) == partitions
    for name in ("UNIQUE", "DUPLICATE", "DLQ"):
        assert topics[names[name]]["configs"].get("cleanup.policy") in {None, "delete"}


def test_compose_topics_take_the_largest_message_the_worker_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = {k: interpolate(v) for k, v in env_of(service("worker")).items()}
    need = settings_from_env(monkeypatch, env).worker.output_max_message_bytes
    for name, topic in created_topics().items():
        have = int(topic["configs"].get("max.message.bytes", 1_048_588))  # broker default
        assert have >= need, f"{name}: max.message.bytes {have} < {need}"


def kafka_listeners() -> tuple[dict[str, str], dict[str, str]]:
    env = env_of(service("kafka"))

    def parse(value: str) -> dict[str, str]:
        return dict(item.split("://", 1) for item in value.split(","))

    return parse(env["KAFKA_LISTENERS"]), parse(env["KAFKA_ADVERTISED_LISTENERS"])


def test_compose_bootstrap_is_the_internal_listener() -> None:
    listeners, advertised = kafka_listeners()
    published = {str(p).rsplit(":", 1)[-1].split("/")[0] for p in service("kafka").get("ports", [])}
    bootstrap = env_of(service("worker"))["NEARDUP_KAFKA__BOOTSTRAP_SERVERS"]
    internal = [name for name, addr in advertised.items() if addr == bootstrap]
    assert internal, f"{bootstrap} is not an advertised listener of the kafka service"
    host, port = bootstrap.rsplit(":", 1)
    assert host in {"kafka", service("kafka").get("hostname")}
    assert listeners[internal[0]].rsplit(":", 1)[-1] == port
    assert port not in published, "containers must not use the host-facing listener"
    # The host-facing listener is advertised as localhost on the published port.
    external = [addr for addr in advertised.values() if addr.rsplit(":", 1)[-1] in published]
    assert external and all(a.startswith(("localhost:", "127.0.0.1:")) for a in external)
    for topic in created_topics().values():
        assert topic["bootstrap-server"] == bootstrap


def test_compose_kafka_is_single_node_kraft_with_transactions() -> None:
    env = env_of(service("kafka"))
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_LISTENER_NAMES"] in kafka_listeners()[0]
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"].startswith(f"{env['KAFKA_NODE_ID']}@")
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == "1"
    image = service("kafka")["image"]
    assert image.startswith("apache/kafka:4.")
    assert service("topic-init")["image"] == image
    limits = service("kafka")["deploy"]["resources"]["limits"]
    assert limits.get("cpus") and limits.get("memory")


def test_compose_startup_order_and_healthchecks() -> None:
    assert service("topic-init")["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert (
        service("worker")["depends_on"]["topic-init"]["condition"]
        == "service_completed_successfully"
    )
    kafka_check = service("kafka")["healthcheck"]["test"]
    assert "kafka-broker-api-versions.sh" in " ".join(kafka_check)
    worker_check = service("worker")["healthcheck"]["test"]
    assert worker_check[:4] == ["CMD", "python", "-c", worker_check[3]]
    assert "/healthz" in worker_check[3]
    compile(worker_check[3], "worker healthcheck", "exec")
    for name in ("prometheus", "grafana"):
        assert service(name)["healthcheck"]["test"]


def test_compose_ui_ports_bind_to_loopback_only() -> None:
    for name, port in (("prometheus", 9090), ("grafana", 3000), ("kafka", None)):
        for mapping in service(name).get("ports", []):
            assert str(mapping).startswith("127.0.0.1:"), f"{name} publishes {mapping}"
            if port is not None:
                assert str(mapping).endswith(f":{port}")


def mount_target(svc: dict[str, Any], source: str) -> str:
    for volume in svc.get("volumes", []):
        src, dst, *_ = str(volume).split(":")
        if (ROOT / src).resolve() == (ROOT / source).resolve():
            return dst
    raise AssertionError(f"{source} is not mounted")


# --- Prometheus -----------------------------------------------------------------------------


def test_prometheus_scrapes_every_worker_replica() -> None:
    prom = service("prometheus")
    config_dir = mount_target(prom, "deploy/prometheus")
    assert f"--config.file={config_dir}/prometheus.yml" in prom["command"]
    config = _yaml(PROMETHEUS_DIR / "prometheus.yml")
    jobs = [
        sd
        for job in config["scrape_configs"]
        for sd in job.get("dns_sd_configs", [])
        if job.get("metrics_path", "/metrics") == "/metrics"
    ]
    assert jobs, "no DNS service discovery of the workers"
    for sd in jobs:
        assert sd["names"] == ["worker"], "the compose service name resolves to all replicas"
        assert sd["type"] == "A"
        assert sd["port"] == METRICS_PORT
    for rule_file in config["rule_files"]:
        assert (PROMETHEUS_DIR / rule_file).resolve() == PROMETHEUS_DIR / "alerts.yml"


# --- PromQL ---------------------------------------------------------------------------------


@cache
def exported_series() -> frozenset[str]:
    """Series names the worker exposes on /metrics (with _total, _bucket, ... suffixes)."""
    registry = CollectorRegistry()
    build_metrics(registry)
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_sum", "_count", "_created"),
        "summary": ("", "_sum", "_count", "_created"),
        "gauge": ("",),
    }
    names = set()
    for family in registry.collect():
        names.update(family.name + suffix for suffix in suffixes[family.type])
    return frozenset(names)


def exported_families() -> set[str]:
    registry = CollectorRegistry()
    build_metrics(registry)
    return {family.name for family in registry.collect()}


def family_of(series: str) -> str:
    return re.sub(r"_(total|created|bucket|sum|count)$", "", series)


def metrics_in(expr: str) -> set[str]:
    """Metric names selected by a PromQL expression; it must parse and type-check."""
    try:
        ast = promql_parser.parse(expr)
    except ValueError as exc:
        raise AssertionError(f"invalid PromQL {expr!r}: {exc}") from exc
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            assert node.name, f"selector without a metric name in {expr!r}"
            names.add(node.name)

    promql_parser.walk(ast, visit)
    assert names, f"{expr!r} selects no metric"
    return names


def check_expr(expr: str) -> set[str]:
    names = metrics_in(expr)
    unknown = names - exported_series()
    assert not unknown, f"{expr!r} uses metrics the worker does not export: {sorted(unknown)}"
    # Belt and braces: every neardup_* token in the text is a real series name too.
    mentioned = set(re.findall(r"\bneardup_[a-z_]+", expr))
    assert mentioned <= exported_series(), sorted(mentioned - exported_series())
    return names


def test_exported_series_cover_the_documented_metrics() -> None:
    expected = {
        "neardup_documents_total", "neardup_dlq_messages_total",
        "neardup_batch_processing_seconds_bucket", "neardup_decision_latency_seconds_bucket",
        "neardup_index_documents", "neardup_index_entries", "neardup_index_bytes",
        "neardup_consumer_lag_messages", "neardup_restore_seconds",
        "neardup_restored_records_total", "neardup_transaction_aborts_total", "neardup_ready",
    }  # fmt: skip
    assert expected <= exported_series()
    with pytest.raises(AssertionError, match="does not export"):
        check_expr("rate(neardup_no_such_metric_total[5m])")
    with pytest.raises(AssertionError, match="invalid PromQL"):
        check_expr("rate(neardup_ready)")  # rate() of an instant vector


# --- Grafana --------------------------------------------------------------------------------


@cache
def dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD_FILE.read_text())


def provisioned_datasource() -> dict[str, Any]:
    files = sorted((GRAFANA_DIR / "provisioning" / "datasources").glob("*.y*ml"))
    datasources = [ds for f in files for ds in _yaml(f)["datasources"]]
    prometheus = [ds for ds in datasources if ds["type"] == "prometheus"]
    assert len(prometheus) == 1
    return prometheus[0]


def panels() -> Iterator[dict[str, Any]]:
    for panel in dashboard()["panels"]:
        yield panel
        yield from panel.get("panels", [])


def test_grafana_datasource_points_at_prometheus() -> None:
    ds = provisioned_datasource()
    assert ds["url"] == "http://prometheus:9090"
    assert ds["uid"]


def test_grafana_dashboard_provider_loads_the_mounted_dashboards() -> None:
    grafana = service("grafana")
    assert mount_target(grafana, "deploy/grafana/provisioning") == "/etc/grafana/provisioning"
    dashboards_dir = mount_target(grafana, "deploy/grafana/dashboards")
    files = sorted((GRAFANA_DIR / "provisioning" / "dashboards").glob("*.y*ml"))
    providers = [p for f in files for p in _yaml(f)["providers"]]
    assert [p["options"]["path"] for p in providers] == [dashboards_dir]
    env = env_of(grafana)
    assert env["GF_AUTH_ANONYMOUS_ENABLED"] == "true"
    assert env["GF_AUTH_ANONYMOUS_ORG_ROLE"] == "Viewer"


def test_grafana_dashboard_shape() -> None:
    board = dashboard()
    assert board["title"] == "neardup-stream"
    assert board["uid"]
    assert 36 <= board["schemaVersion"] <= 41
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    boxes = []
    for panel in panels():
        pos = panel["gridPos"]
        assert pos["x"] >= 0 and pos["w"] > 0 and pos["x"] + pos["w"] <= 24, panel["title"]
        boxes.append((pos["x"], pos["y"], pos["w"], pos["h"], panel["title"]))
    for i, (x1, y1, w1, h1, t1) in enumerate(boxes):
        for x2, y2, w2, h2, t2 in boxes[i + 1 :]:
            overlap = x1 < x2 + w2 and x2 < x1 + w1 and y1 < y2 + h2 and y2 < y1 + h1
            assert not overlap, f"panels {t1!r} and {t2!r} overlap"


def test_grafana_panels_use_the_provisioned_datasource_and_real_metrics() -> None:
    uid = provisioned_datasource()["uid"]
    used: set[str] = set()
    exprs = []
    for panel in panels():
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == uid, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        for target in panel["targets"]:
            assert target.get("datasource", panel["datasource"])["uid"] == uid
            exprs.append(target["expr"])
            used |= check_expr(target["expr"])
    # Every metric the worker exports is on the dashboard.
    assert exported_families() <= {family_of(name) for name in used}
    normalized = {re.sub(r"\s+", "", e) for e in exprs}
    for expected in (
        "sum by (decision) (rate(neardup_documents_total[1m]))",
        "sum by (method) (rate(neardup_documents_total[1m]))",
        "histogram_quantile(0.5, sum by (le) (rate(neardup_decision_latency_seconds_bucket[5m])))",
        "histogram_quantile(0.99, sum by (le) (rate(neardup_decision_latency_seconds_bucket[5m])))",
        "histogram_quantile(0.99, sum by (le) (rate(neardup_batch_processing_seconds_bucket[5m])))",
    ):
        assert re.sub(r"\s+", "", expected) in normalized, expected


# --- alert rules ----------------------------------------------------------------------------


def alert_groups() -> list[dict[str, Any]]:
    return _yaml(PROMETHEUS_DIR / "alerts.yml")["groups"]


def test_alert_rules_are_the_same_for_compose_and_kubernetes() -> None:
    assert alert_groups() == k8s_object("PrometheusRule")["spec"]["groups"]


def test_alert_rules_are_well_formed_and_use_real_metrics() -> None:
    names = set()
    for group in alert_groups():
        assert group["name"]
        for rule in group["rules"]:
            assert ("alert" in rule) != ("record" in rule)
            names.add(rule.get("alert"))
            check_expr(rule["expr"])
            assert DURATION.fullmatch(rule.get("for", "0")), rule.get("for")
            assert rule["labels"]["severity"] in {"info", "warning", "critical"}
            assert rule["annotations"]["summary"]
            for value in [*rule["labels"].values(), *rule["annotations"].values()]:
                assert isinstance(value, str)
    assert names >= REQUIRED_ALERTS
    by_name = {r.get("alert"): r for g in alert_groups() for r in g["rules"]}
    assert "deriv(" in by_name["NeardupConsumerLagGrowing"]["expr"]
    assert re.search(
        r"neardup_restore_seconds\s*>\s*60\b", by_name["NeardupRestoreTooSlow"]["expr"]
    )


def test_every_alert_has_promtool_tests_that_fire_and_that_do_not() -> None:
    """deploy/prometheus/alerts.test.yml (run by tests/integration/test_alert_rules.py) tests
    each alert with input series, both where it must fire and where it must stay quiet."""
    tests = _yaml(PROMETHEUS_DIR / "alerts.test.yml")
    assert tests["rule_files"] == ["alerts.yml"]
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in tests["tests"]:
        assert case["input_series"], case["name"]
        for check in case["alert_rule_test"]:
            (firing if check["exp_alerts"] else quiet).add(check["alertname"])
    alerts = {r["alert"] for g in alert_groups() for r in g["rules"] if "alert" in r}
    assert firing == alerts, f"alerts never tested firing: {alerts - firing}"
    assert quiet == alerts, f"alerts never tested quiet: {alerts - quiet}"


# --- Kubernetes -----------------------------------------------------------------------------


def is_custom_resource(doc: dict[str, Any]) -> bool:
    return doc["apiVersion"].split("/")[0] in CRD_GROUPS


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_k8s_builtin_manifests_validate_against_the_schemas(version: str) -> None:
    builtin = [(name, doc) for name, doc in k8s_documents() if not is_custom_resource(doc)]
    kinds = {doc["kind"] for _, doc in builtin}
    assert {"Namespace", "ConfigMap", "Secret", "StatefulSet", "Service"} <= kinds
    for name, doc in builtin:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            raise AssertionError(
                f"{name}: {doc['kind']} invalid at {where}: {exc.message}"
            ) from exc


def test_k8s_validator_rejects_unknown_fields() -> None:
    statefulset = json.loads(json.dumps(k8s_object("StatefulSet")))
    statefulset["spec"]["template"]["spec"]["containers"][0]["livenesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(statefulset, K8S_VERSIONS[0], strict=True)


def test_k8s_kustomization_lists_every_manifest_but_the_example_secret() -> None:
    kustomization = _yaml(K8S_DIR / "kustomization.yaml")
    files = {p.name for p in K8S_DIR.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files - {"secret.example.yaml"}
    namespace = k8s_object("Namespace")["metadata"]["name"]
    assert kustomization["namespace"] == namespace
    for name, doc in k8s_documents():
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == namespace, name
    image_names = {image["name"] for image in kustomization.get("images", [])}
    assert container()["image"].split(":")[0] in image_names


def test_k8s_statefulset_identity_and_config() -> None:
    statefulset = k8s_object("StatefulSet")
    spec = statefulset["spec"]
    c = container()
    assert spec["replicas"] == 3
    assert spec["replicas"] <= int(configmap_data()["NEARDUP_TOPICS__PARTITIONS"])
    assert [ref["configMapRef"]["name"] for ref in c["envFrom"]] == [
        k8s_object("ConfigMap")["metadata"]["name"]
    ]
    env = {e["name"]: e for e in c["env"]}
    assert env["NEARDUP_WORKER__INSTANCE_ID"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.name"}
    }
    assert env["NEARDUP_METRICS__HOST"]["value"] == "0.0.0.0"
    headless = k8s_object("Service")
    assert spec["serviceName"] == headless["metadata"]["name"]
    labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= labels.items()
    assert headless["spec"]["selector"].items() <= labels.items()
    pdb = k8s_object("PodDisruptionBudget")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_k8s_sasl_credentials_come_from_the_secret() -> None:
    secret = k8s_object("Secret")
    env = {e["name"]: e for e in container()["env"]}
    for var, key in (
        ("NEARDUP_KAFKA__SASL_USERNAME", "username"),
        ("NEARDUP_KAFKA__SASL_PASSWORD", "password"),
    ):
        assert "value" not in env[var], f"{var} must not be inline"
        ref = env[var]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": secret["metadata"]["name"], "key": key}
        assert key in secret.get("stringData", secret.get("data", {}))
    # No credential anywhere else in plain text.
    for name, entry in env.items():
        if re.search(r"PASSWORD|USERNAME|SECRET|TOKEN", name):
            assert "secretKeyRef" in entry.get("valueFrom", {}), name
    for key in configmap_data():
        assert not re.search(r"PASSWORD|USERNAME|SECRET|TOKEN", key), key


def pod_env(config: dict[str, str]) -> dict[str, str]:
    """A pod's environment: the ConfigMap's data, then the container's env entries."""
    env = dict(config)
    for entry in container()["env"]:
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        elif "fieldRef" in entry["valueFrom"]:
            env[entry["name"]] = f"{k8s_object('StatefulSet')['metadata']['name']}-0"
        else:
            env[entry["name"]] = "placeholder"
    return env


def test_k8s_env_is_valid_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from_env(monkeypatch, pod_env(configmap_data()))
    assert settings.worker.instance_id == "neardup-worker-0"
    assert settings.metrics.host == "0.0.0.0"
    assert settings.metrics.port == METRICS_PORT
    assert settings.kafka.security_protocol.startswith("SASL")


def test_k8s_ports_probes_resources_security() -> None:
    c = container()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"metrics": METRICS_PORT}
    assert int(configmap_data().get("NEARDUP_METRICS__PORT", METRICS_PORT)) == METRICS_PORT
    service_ports = k8s_object("Service")["spec"]["ports"]
    assert [(p["name"], p["port"], p["targetPort"]) for p in service_ports] == [
        ("metrics", METRICS_PORT, "metrics")
    ]
    assert k8s_object("Service")["spec"].get("clusterIP") == "None"
    for probe_name in ("readinessProbe", "livenessProbe"):
        probe = c[probe_name]["httpGet"]
        assert probe["path"] == "/healthz"
        assert probe["port"] in {"metrics", METRICS_PORT}
    liveness = c["livenessProbe"]
    patience = liveness.get("initialDelaySeconds", 0) + liveness.get(
        "periodSeconds", 10
    ) * liveness.get("failureThreshold", 3)
    assert patience >= 300, "an index restore must not get the pod killed"
    for bound in ("requests", "limits"):
        assert {"cpu", "memory"} <= set(c["resources"][bound])
    pod = k8s_object("StatefulSet")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    sc = c["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    tmp = [m for m in c["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert len(tmp) == 1
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[tmp[0]["name"]]


def test_k8s_podmonitor_scrapes_the_metrics_port() -> None:
    monitor = k8s_object("PodMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    labels = k8s_object("StatefulSet")["spec"]["template"]["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= labels.items()
    endpoints = monitor["spec"]["podMetricsEndpoints"]
    assert endpoints
    for endpoint in endpoints:
        assert endpoint["port"] == "metrics"
        assert endpoint.get("path", "/metrics") == "/metrics"
        assert DURATION.fullmatch(endpoint.get("interval", "0"))


def test_k8s_prometheusrule_structure() -> None:
    rule = k8s_object("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert set(rule["spec"]) == {"groups"}
    group_names = [g["name"] for g in rule["spec"]["groups"]]
    assert len(group_names) == len(set(group_names))
    allowed = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
    for group in rule["spec"]["groups"]:
        for r in group["rules"]:
            assert set(r) <= allowed, set(r) - allowed
            assert isinstance(r["expr"], str)


def test_k8s_keda_scaledobject() -> None:
    scaled = k8s_object("ScaledObject")
    auth = k8s_object("TriggerAuthentication")
    statefulset = k8s_object("StatefulSet")
    config = configmap_data()
    for doc in (scaled, auth):
        assert doc["apiVersion"] == "keda.sh/v1alpha1"
    spec = scaled["spec"]
    target = spec["scaleTargetRef"]
    assert (target.get("apiVersion"), target.get("kind"), target["name"]) == (
        statefulset["apiVersion"], statefulset["kind"], statefulset["metadata"]["name"],
    )  # fmt: skip
    partitions = int(config["NEARDUP_TOPICS__PARTITIONS"])
    assert 1 <= spec["minReplicaCount"] <= spec["maxReplicaCount"] <= partitions
    assert spec["maxReplicaCount"] == partitions
    (trigger,) = [t for t in spec["triggers"] if t["type"] == "kafka"]
    # Scale-out: the shard role's lag, which the input lag does not show.
    (shard_lag,) = [t for t in spec["triggers"] if t["type"] == "prometheus"]
    assert len(spec["triggers"]) == 2
    assert "neardup_role_lag_messages" in shard_lag["metadata"]["query"]
    assert family_of("neardup_role_lag_messages") in exported_families()
    assert float(shard_lag["metadata"]["threshold"]) > 0
    meta = trigger["metadata"]
    assert all(isinstance(v, str) for v in meta.values()), "KEDA metadata values are strings"
    assert meta["bootstrapServers"] == config["NEARDUP_KAFKA__BOOTSTRAP_SERVERS"]
    assert meta["consumerGroup"] == config["NEARDUP_WORKER__GROUP_ID"]
    assert meta["topic"] == config["NEARDUP_TOPICS__INPUT"]
    assert int(meta["lagThreshold"]) > 0
    assert meta.get("allowIdleConsumers", "false") == "false"
    mechanism = config.get("NEARDUP_KAFKA__SASL_MECHANISM")
    keda_sasl = {"PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256",
                 "SCRAM-SHA-512": "scram_sha512", None: "none"}  # fmt: skip
    assert meta.get("sasl", "none") == keda_sasl[mechanism]
    uses_tls = config.get("NEARDUP_KAFKA__SECURITY_PROTOCOL", "PLAINTEXT").endswith("SSL")
    assert (meta.get("tls", "disable") == "enable") == uses_tls
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    # The TriggerAuthentication reads the workers' own Secret and keys.
    secret_refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in container()["env"]
        if "secretKeyRef" in e.get("valueFrom", {})
    }
    params = {ref["parameter"]: ref for ref in auth["spec"]["secretTargetRef"]}
    assert set(params) == {"username", "password"}
    for parameter, var in (
        ("username", "NEARDUP_KAFKA__SASL_USERNAME"),
        ("password", "NEARDUP_KAFKA__SASL_PASSWORD"),
    ):
        assert {k: params[parameter][k] for k in ("name", "key")} == secret_refs[var]


# --- settings from the environment ------------------------------------------------------------


def settings_from_env(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Settings:
    """Check every NEARDUP_* name is a real setting, then build Settings from exactly `env`."""
    for name in env:
        if not name.startswith("NEARDUP_"):
            continue
        section, _, field = name.removeprefix("NEARDUP_").lower().partition("__")
        assert section in Settings.model_fields, f"{name}: no settings section {section!r}"
        annotation = Settings.model_fields[section].annotation
        if field:
            assert isinstance(annotation, type) and issubclass(annotation, BaseModel), name
            assert field in annotation.model_fields, f"{name}: {section} has no {field!r}"
    for name in [n for n in os.environ if n.startswith("NEARDUP_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        if name.startswith("NEARDUP_"):
            monkeypatch.setenv(name, value)
    return Settings()


# --- scale-out overlay ----------------------------------------------------------------------


def _json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply `add`/`replace`/`remove` JSON-patch operations (what the overlay uses) to a copy."""
    out = json.loads(json.dumps(doc))
    for op in ops:
        assert op["op"] in {"add", "replace", "remove"}, op
        *parents, last = op["path"].strip("/").split("/")
        node: Any = out
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if op["op"] == "remove":  # (JSON patch: the path must exist)
            del node[int(last) if isinstance(node, list) else last]
            continue
        if op["op"] == "replace":
            assert (int(last) < len(node)) if isinstance(node, list) else last in node, op
        if isinstance(node, list):
            node[int(last)] = op["value"]
        else:
            node[last] = op["value"]
    return out


def test_the_scale_out_overlay_makes_valid_settings_and_scales_on_the_edge_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    overlay = _yaml(K8S_DIR / "scale-out" / "kustomization.yaml")
    assert overlay["resources"] == [".."]
    patched = {}
    for entry in overlay["patches"]:
        kind = entry["target"]["kind"]
        base = k8s_object(kind)
        assert base["metadata"]["name"] == entry["target"]["name"]
        patched[kind] = _json_patch(base, yaml.safe_load(entry["patch"]))
    settings = settings_from_env(monkeypatch, pod_env(patched["ConfigMap"]["data"]))
    assert settings.topic_scope
    assert settings.unused == (), "the overlay sets nothing topic scope does not read"
    assert settings.dedup.home_shards >= int(k8s_object("ScaledObject")["spec"]["maxReplicaCount"])
    group = patched["ScaledObject"]["spec"]["triggers"][0]["metadata"]["consumerGroup"]
    assert group == f"{settings.worker.group_id}-edge"
