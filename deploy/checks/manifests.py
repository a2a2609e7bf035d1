#!/usr/bin/env python3
"""Structural checks of deploy/ that YAML parsing alone would not catch.

Run by scripts/check-deploy.sh:  manifests.py <check> <repo-root> [metric-catalogue.json]
  compose   docker-compose.yml: services, healthchecks, dependencies, mounts, no literal secrets
  k8s       deploy/k8s: selectors, probes, ports, security, resources, secret references, grace period
  alerts    alerts.yml vs alerts.test.yml, docs/runbook.md anchors and the metric catalogue
  yaml      every YAML file under deploy/ parses
Prints one line per problem and exits 1 if there is any; prints a short summary otherwise.
Needs PyYAML (Debian: python3-yaml).
"""
import json
import re
import sys
from pathlib import Path

import yaml

problems: list[str] = []


def problem(msg: str) -> None:
    problems.append(msg)


def load_all(path: Path) -> list:
    with path.open() as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


# --------------------------------------------------------------------- yaml
def check_yaml(root: Path) -> str:
    files = sorted(p for p in (root / "deploy").rglob("*") if p.suffix in (".yml", ".yaml"))
    for p in files:
        try:
            load_all(p)
        except yaml.YAMLError as e:
            problem(f"{p.relative_to(root)}: {e}")
    return f"{len(files)} YAML files parse"


# ------------------------------------------------------------------ compose
SECRETISH = re.compile(r"(SECRET|PASSWORD|API_KEY|ENCRYPTION_KEY|DATABASE_URL|TOKEN)", re.I)
POSTROOM_ROLES = ("postroom", "worker", "reconciler")


def duration_seconds(v: str) -> float:
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(v))
    if not m or not any(m.groups()):
        raise ValueError(v)
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def check_compose(root: Path) -> str:
    deploy = root / "deploy"
    path = deploy / "docker-compose.yml"
    doc = load_all(path)[0]
    services = doc.get("services", {})
    for required in ("postgres", "migrate", *POSTROOM_ROLES, "sandbox", "prometheus", "grafana"):
        if required not in services:
            problem(f"docker-compose.yml: service {required!r} missing")
    if "healthcheck" not in services.get("postgres", {}):
        problem("docker-compose.yml: postgres has no healthcheck")
    for name, svc in services.items():
        deps = svc.get("depends_on", {})
        for dep, cond in (deps.items() if isinstance(deps, dict) else ((d, {}) for d in deps)):
            if dep not in services:
                problem(f"docker-compose.yml: {name} depends on unknown service {dep!r}")
            c = (cond or {}).get("condition", "service_started")
            if c not in ("service_started", "service_healthy", "service_completed_successfully"):
                problem(f"docker-compose.yml: {name} depends_on {dep} with unknown condition {c!r}")
        for ef in svc.get("env_file", []) or []:
            ef = ef if isinstance(ef, str) else ef.get("path", "")
            if not (deploy / ef).exists() and not (deploy / f"{ef}.example").exists():
                problem(f"docker-compose.yml: {name} env_file {ef} has neither the file nor {ef}.example")
        for vol in svc.get("volumes", []) or []:
            src = vol.split(":", 1)[0] if isinstance(vol, str) else vol.get("source", "")
            if src.startswith("."):
                if not (deploy / src).exists():
                    problem(f"docker-compose.yml: {name} mounts {src}, which does not exist")
        env = svc.get("environment", {}) or {}
        if isinstance(env, dict):
            items = list(env.items())
        else:
            items = [tuple((e.split("=", 1) + [""])[:2]) for e in env]
        for k, v in items:
            if SECRETISH.search(k) and not k.endswith("_FILE") and v not in (None, ""):
                problem(f"docker-compose.yml: {name} sets {k} literally; put it in postroom.env")
        for port in svc.get("ports", []) or []:
            if not str(port).startswith("127.0.0.1:"):
                problem(f"docker-compose.yml: {name} publishes {port} beyond loopback")
    for name in POSTROOM_ROLES:
        svc = services.get(name, {})
        cmd = svc.get("command", [])
        if "--no-migrate" not in cmd:
            problem(f"docker-compose.yml: {name} should start with --no-migrate (the migrate service migrates)")
        deps = svc.get("depends_on", {})
        if not isinstance(deps, dict) or deps.get("migrate", {}).get("condition") != "service_completed_successfully":
            problem(f"docker-compose.yml: {name} must wait for migrate to complete")
        try:
            if duration_seconds(svc.get("stop_grace_period", "10s")) < 25:
                problem(f"docker-compose.yml: {name} stop_grace_period is shorter than the 20 s drain")
        except ValueError:
            problem(f"docker-compose.yml: {name} stop_grace_period unreadable")
    prom_mounts = " ".join(services.get("prometheus", {}).get("volumes", []))
    if "./prometheus:" not in prom_mounts:
        problem("docker-compose.yml: prometheus does not mount ./prometheus (config and alert rules)")
    graf_mounts = " ".join(services.get("grafana", {}).get("volumes", []))
    for want in ("./grafana/provisioning:", "./grafana/dashboards:"):
        if want not in graf_mounts:
            problem(f"docker-compose.yml: grafana does not mount {want.rstrip(':')}")
    return f"compose: {len(services)} services"


# ---------------------------------------------------------------------- k8s
def labels_match(selector: dict, labels: dict) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def render_kustomize(kdir: Path) -> list | None:
    """The objects `kubectl kustomize` renders, or None when kubectl is not installed."""
    import shutil
    import subprocess

    if not shutil.which("kubectl"):
        return None
    out = subprocess.run(["kubectl", "kustomize", str(kdir)], capture_output=True, text=True)
    if out.returncode != 0:
        problem(f"k8s: kubectl kustomize failed: {out.stderr.strip()[:2000]}")
        return []
    return [d for d in yaml.safe_load_all(out.stdout) if d is not None]


def check_kustomize_tree(kdir: Path) -> None:
    """Every kustomization's resources, components and patches exist; every top-level manifest is used."""
    for kfile in sorted(kdir.rglob("kustomization.yaml")):
        k = load_all(kfile)[0]
        rel = kfile.relative_to(kdir.parent)
        for key in ("resources", "components"):
            for r in k.get(key, []) or []:
                if not (kfile.parent / r).exists():
                    problem(f"{rel}: {key[:-1]} {r} does not exist")
        for pt in k.get("patches", []) or []:
            if pt.get("path") and not (kfile.parent / pt["path"]).exists():
                problem(f"{rel}: patch {pt['path']} does not exist")
    top = load_all(kdir / "kustomization.yaml")[0]
    listed = set(top.get("resources", []) or [])
    optional = {"secret.example.yaml", "podmonitor.yaml", "kustomization.yaml"}
    for p in kdir.glob("*.yaml"):
        if p.name not in listed and p.name not in optional:
            problem(f"k8s/kustomization.yaml: {p.name} is not listed")
    for overlay in sorted((kdir / "overlays").glob("*")):
        if f"overlays/{overlay.name}" not in listed:
            problem(f"k8s/kustomization.yaml: overlays/{overlay.name} is not listed")
    if "secret.example.yaml" in listed:
        problem("k8s/kustomization.yaml: must not apply secret.example.yaml")


def check_k8s(root: Path) -> str:
    kdir = root / "deploy" / "k8s"
    raw: list[tuple[str, dict]] = []
    for p in sorted(kdir.rglob("*.yaml")):
        for d in load_all(p):
            raw.append((str(p.relative_to(kdir)), d))
    for fname, d in raw:
        for key in ("apiVersion", "kind"):
            if key not in d:
                problem(f"k8s/{fname}: a document has no {key}")
        if d.get("kind") not in ("Kustomization", "Component") and not d.get("metadata", {}).get("name"):
            problem(f"k8s/{fname}: {d.get('kind')} has no metadata.name")

    # Secrets are referenced, never defined (except the clearly named example).
    example_keys: set[str] = set()
    for fname, d in raw:
        if d.get("kind") != "Secret":
            continue
        if not fname.endswith(".example.yaml"):
            problem(f"k8s/{fname}: defines a Secret; only *.example.yaml may")
        else:
            example_keys |= set((d.get("stringData") or {}).keys()) | set((d.get("data") or {}).keys())
    if not example_keys:
        problem("k8s: no secret.example.yaml documenting the Secret's keys")

    if not (kdir / "kustomization.yaml").exists():
        problem("k8s: kustomization.yaml missing")
        return "k8s: no kustomization"
    check_kustomize_tree(kdir)

    # Base and overlays only make Deployments once rendered: check what is applied.
    rendered = render_kustomize(kdir)
    if rendered is None:
        return f"k8s: {len(raw)} documents; rendered checks skipped (kubectl not installed)"
    docs = [("kustomize", d) for d in rendered]
    by_kind: dict[str, list[tuple[str, dict]]] = {}
    for fname, d in docs:
        by_kind.setdefault(d.get("kind", "?"), []).append((fname, d))

    config = {}
    for _, d in by_kind.get("ConfigMap", []):
        config.update(d.get("data") or {})
    shutdown_ms = int(config.get("POSTROOM_SHUTDOWN_TIMEOUT_MS", "20000"))

    def check_pod(where: str, spec: dict, job: bool = False) -> None:
        pod_sc = spec.get("securityContext", {}) or {}
        if spec.get("automountServiceAccountToken") is not False:
            problem(f"{where}: automountServiceAccountToken should be false")
        volumes = {v["name"]: v for v in spec.get("volumes", []) or []}
        for c in spec.get("containers", []):
            cw = f"{where} container {c.get('name')}"
            sc = c.get("securityContext", {}) or {}
            if not (sc.get("runAsNonRoot") or pod_sc.get("runAsNonRoot")):
                problem(f"{cw}: runAsNonRoot not set")
            if sc.get("readOnlyRootFilesystem") is not True:
                problem(f"{cw}: readOnlyRootFilesystem not true")
            if sc.get("allowPrivilegeEscalation") is not False:
                problem(f"{cw}: allowPrivilegeEscalation not false")
            if "ALL" not in ((sc.get("capabilities") or {}).get("drop") or []):
                problem(f"{cw}: capabilities not dropped")
            res = c.get("resources", {}) or {}
            if not (res.get("requests") or {}).get("memory") or not (res.get("requests") or {}).get("cpu"):
                problem(f"{cw}: cpu/memory requests missing")
            if not (res.get("limits") or {}).get("memory"):
                problem(f"{cw}: memory limit missing")
            if ":" in c.get("image", "") and c["image"].endswith(":latest"):
                problem(f"{cw}: image uses :latest")
            ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", []) or []}
            for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
                pr = c.get(probe)
                if pr is None:
                    if not job and probe != "startupProbe":
                        problem(f"{cw}: {probe} missing")
                    continue
                port = (pr.get("httpGet") or {}).get("port")
                if isinstance(port, str) and port not in ports:
                    problem(f"{cw}: {probe} uses port {port!r}, not a declared port")
            if c.get("livenessProbe") and (c["livenessProbe"].get("httpGet") or {}).get("path") != "/healthz":
                problem(f"{cw}: liveness must use /healthz (never the database)")
            if c.get("readinessProbe") and (c["readinessProbe"].get("httpGet") or {}).get("path") != "/readyz":
                problem(f"{cw}: readiness must use /readyz")
            for e in c.get("env", []) or []:
                ref = (e.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    if ref.get("name") != "postroom-secrets":
                        problem(f"{cw}: env {e['name']} references Secret {ref.get('name')!r}")
                    if ref.get("key") not in example_keys:
                        problem(f"{cw}: env {e['name']} uses key {ref.get('key')!r}, not in secret.example.yaml")
                elif e.get("value") and SECRETISH.search(e["name"]) and not e["name"].endswith("_FILE"):
                    problem(f"{cw}: env {e['name']} is a literal value; reference the Secret")
            for m in c.get("volumeMounts", []) or []:
                if m["name"] not in volumes:
                    problem(f"{cw}: mounts undeclared volume {m['name']}")
            if not job:
                args = c.get("args", [])
                if "--no-migrate" not in args:
                    problem(f"{cw}: should start with --no-migrate (the Job migrates)")
                grace = spec.get("terminationGracePeriodSeconds", 30)
                pre = ((c.get("lifecycle") or {}).get("preStop") or {}).get("exec", {}).get("command", [])
                pre_s = int(pre[-1]) if pre and pre[0] == "sleep" else 0
                if pre_s + shutdown_ms / 1000 >= grace:
                    problem(f"{cw}: preStop {pre_s}s + shutdown {shutdown_ms / 1000}s >= grace {grace}s")
        for v in volumes.values():
            sec = v.get("secret")
            if sec:
                if sec.get("secretName") != "postroom-secrets":
                    problem(f"{where}: volume {v['name']} references Secret {sec.get('secretName')!r}")
                for it in sec.get("items", []) or []:
                    if it["key"] not in example_keys:
                        problem(f"{where}: volume {v['name']} uses key {it['key']!r}, not in secret.example.yaml")

    deployments = by_kind.get("Deployment", [])
    roles = {}
    for fname, d in deployments:
        name = d["metadata"]["name"]
        where = f"k8s/{fname} Deployment {name}"
        sel = d["spec"]["selector"]["matchLabels"]
        tlabels = d["spec"]["template"]["metadata"].get("labels", {})
        if not labels_match(sel, tlabels):
            problem(f"{where}: selector does not match the template labels")
        check_pod(where, d["spec"]["template"]["spec"])
        args = d["spec"]["template"]["spec"]["containers"][0].get("args", [])
        role = args[args.index("--role") + 1] if "--role" in args else "all"
        roles[role] = d
        if role in ("ingress", "all", "worker") and d["spec"].get("replicas", 1) < 2:
            problem(f"{where}: {role} needs at least 2 replicas")
    for role in ("ingress", "worker", "reconciler"):
        if role not in roles and "all" not in roles:
            problem(f"k8s: no Deployment runs the {role} role")
    ingress = roles.get("ingress") or roles.get("all")
    if ingress:
        c = ingress["spec"]["template"]["spec"]["containers"][0]
        if not ((c.get("lifecycle") or {}).get("preStop")):
            problem("k8s: the ingress Deployment has no preStop sleep")

    def selects(selector: dict) -> list[dict]:
        return [d for _, d in deployments if labels_match(selector, d["spec"]["template"]["metadata"].get("labels", {}))]

    for fname, svc in by_kind.get("Service", []):
        sel = svc["spec"].get("selector", {})
        targets = selects(sel)
        if not targets:
            problem(f"k8s/{fname} Service {svc['metadata']['name']}: selector matches no Deployment")
        for port in svc["spec"].get("ports", []):
            tp = port.get("targetPort")
            for t in targets:
                names = {p.get("name") for c in t["spec"]["template"]["spec"]["containers"] for p in c.get("ports", []) or []}
                if isinstance(tp, str) and tp not in names:
                    problem(f"k8s/{fname} Service: targetPort {tp!r} not declared by {t['metadata']['name']}")
    for fname, pdb in by_kind.get("PodDisruptionBudget", []):
        targets = selects(pdb["spec"]["selector"]["matchLabels"])
        if not targets:
            problem(f"k8s/{fname} PDB {pdb['metadata']['name']}: selector matches no Deployment")
        for t in targets:
            if pdb["spec"].get("minAvailable", 0) >= t["spec"].get("replicas", 1):
                problem(f"k8s/{fname} PDB {pdb['metadata']['name']}: minAvailable blocks every eviction of {t['metadata']['name']}")
    jobs = by_kind.get("Job", [])
    if not jobs:
        problem("k8s: no migration Job")
    for fname, j in jobs:
        spec = j["spec"]["template"]["spec"]
        check_pod(f"k8s/{fname} Job {j['metadata']['name']}", spec, job=True)
        if spec.get("restartPolicy") not in ("Never", "OnFailure"):
            problem(f"k8s/{fname}: Job restartPolicy must be Never or OnFailure")
        if spec["containers"][0].get("args") != ["migrate"]:
            problem(f"k8s/{fname}: the Job should run `migrate`")
        # A Job's template is immutable: only a name per release lets each release migrate without a hand delete.
        image = spec["containers"][0].get("image", "")
        tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else ""
        if not tag or not j["metadata"]["name"].endswith(f"-{tag}"):
            problem(f"k8s: the migration Job {j['metadata']['name']} is not named after its image tag {tag!r}")
        if not j["spec"].get("ttlSecondsAfterFinished"):
            problem(f"k8s: the migration Job {j['metadata']['name']} has no ttlSecondsAfterFinished (finished Jobs would pile up)")
    return f"k8s: {len(raw)} documents, rendered {len(docs)} objects, {len(deployments)} Deployments"


# ------------------------------------------------------------------- alerts
def slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def metric_names(expr: str) -> set[str]:
    no_strings = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    # postroom's own metrics, and Node's process metrics under their stock names.
    return set(re.findall(r"\b(?:postroom|process|nodejs)_[a-zA-Z0-9_]+", no_strings))


def check_alerts(root: Path, catalogue_path: str | None) -> str:
    pdir = root / "deploy" / "prometheus"
    # Each rule file of the folder with its tests: alerts.yml (alerts.test.yml), slo.yml (slo.test.yml).
    rule_files = ["alerts", "slo"]
    rules = {"groups": [g for f in rule_files for g in load_all(pdir / f"{f}.yml")[0]["groups"]]}
    tests = {"tests": [t for f in rule_files for t in load_all(pdir / f"{f}.test.yml")[0].get("tests", [])]}
    runbook = root / "docs" / "runbook.md"
    anchors = set()
    if runbook.exists():
        for line in runbook.read_text().splitlines():
            m = re.match(r"^#{1,6}\s+(.*)$", line)
            if m:
                anchors.add(slug(m.group(1)))
            for a in re.findall(r'<a (?:id|name)="([^"]+)"', line):
                anchors.add(a)
    else:
        problem("docs/runbook.md does not exist")
    catalogue = set(json.load(open(catalogue_path))) if catalogue_path else set()

    alerts: dict[str, set[str]] = {}
    for g in rules["groups"]:
        for r in g["rules"]:
            if "alert" not in r:
                continue
            name = r["alert"]
            sev = (r.get("labels") or {}).get("severity")
            if sev not in ("warning", "critical"):
                problem(f"alerts.yml {name}: severity must be warning or critical, got {sev!r}")
            alerts.setdefault(name, set()).add(sev)
            ann = r.get("annotations") or {}
            for key in ("summary", "description", "runbook_url"):
                if not ann.get(key):
                    problem(f"alerts.yml {name}: annotation {key} missing")
            url = ann.get("runbook_url", "")
            if not url.startswith("docs/runbook.md#"):
                problem(f"alerts.yml {name}: runbook_url should point into docs/runbook.md#<anchor>, got {url!r}")
            elif url.split("#", 1)[1] not in anchors:
                problem(f"alerts.yml {name}: runbook anchor #{url.split('#', 1)[1]} not found in docs/runbook.md")
            if catalogue:
                for m in sorted(metric_names(r["expr"]) - catalogue):
                    problem(f"alerts.yml {name}: metric {m} is not exported by src/metrics/metrics.ts")

    fires: dict[str, set[str]] = {}
    quiet: set[str] = set()
    for t in tests.get("tests", []):
        for case in t.get("alert_rule_test", []) or []:
            name = case["alertname"]
            if name not in alerts:
                problem(f"alerts.test.yml: tests unknown alert {name}")
            exp = case.get("exp_alerts") or []
            if not exp:
                quiet.add(name)
            for e in exp:
                fires.setdefault(name, set()).add((e.get("exp_labels") or {}).get("severity"))
    for name, sevs in sorted(alerts.items()):
        if name not in quiet:
            problem(f"alerts.test.yml: {name} has no case where it must not fire")
        for sev in sorted(sevs):
            if sev not in fires.get(name, set()):
                problem(f"alerts.test.yml: {name} ({sev}) has no case where it fires")
    n_rules = sum(len(v) for v in alerts.values())
    return f"alerts: {len(alerts)} alerts ({n_rules} rules) covered firing and quiet, runbook anchors present"


def main() -> int:
    check, root = sys.argv[1], Path(sys.argv[2]).resolve()
    fn = {
        "yaml": lambda: check_yaml(root),
        "compose": lambda: check_compose(root),
        "k8s": lambda: check_k8s(root),
        "alerts": lambda: check_alerts(root, sys.argv[3] if len(sys.argv) > 3 else None),
    }[check]
    try:
        summary = fn()
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, yaml.YAMLError, OSError) as e:
        problem(f"{check}: could not check ({type(e).__name__}: {e})")
        summary = ""
    if problems:
        for p in problems:
            print(p)
        return 1
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
