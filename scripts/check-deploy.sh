#!/usr/bin/env bash
# Validates everything under deploy/ (and docs/runbook.md's alert anchors):
#   - promtool check rules / test rules on each rule file of deploy/prometheus (alerts.yml, slo.yml)
#     and its tests (<name>.test.yml)
#   - promtool check config on deploy/prometheus/prometheus.yml (rule_files resolve)
#   - every alert has a firing and a quiet test case, a runbook anchor that exists,
#     and uses only metrics that src/metrics/metrics.ts exports
#   - the Grafana dashboard: JSON, classic model, $datasource everywhere, known
#     metrics only, every expression parses (promtool)
#   - every YAML file parses; compose and Kubernetes structural checks
#   - optional, when the tools are installed: `kubectl kustomize`, `docker compose config`
#
# Non-interactive and idempotent: installs promtool (Debian package prometheus,
# without starting its service) and PyYAML (python3-yaml) when missing, as
# root or with passwordless sudo. Exits non-zero if any check fails.
#
#   scripts/check-deploy.sh
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C

cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
START=$(date +%s)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

passed=0
failed=0
skipped=0
failures=()

ok() { passed=$((passed + 1)); printf 'ok    %-34s %s\n' "$1" "${2:-}"; }
ko() {
  failed=$((failed + 1)); failures+=("$1"); printf 'FAIL  %s\n' "$1"
  [ -n "${2:-}" ] && printf '%s\n' "$2" | sed 's/^/      /'
  return 0
}
skip() { skipped=$((skipped + 1)); printf 'skip  %-34s %s\n' "$1" "$2"; }

# run NAME CMD...: record the outcome; show the last line on success, everything on failure.
run() {
  local name=$1 out; shift
  if out=$("$@" 2>&1); then ok "$name" "$(printf '%s\n' "$out" | grep -v '^\s*$' | tail -1 | sed 's/^ *//')"
  else ko "$name" "$out"; fi
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo > /dev/null 2>&1 && sudo -n true 2> /dev/null; then sudo -n "$@"
  else echo "need root (or passwordless sudo) to install $*" >&2; return 1; fi
}

apt_updated=
apt_install() {
  command -v apt-get > /dev/null 2>&1 || { echo "apt-get not available; install $* yourself" >&2; return 1; }
  # Keep packages from starting services (Debian's prometheus package would).
  local policy_created= rc=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d > /dev/null && as_root chmod 0755 /usr/sbin/policy-rc.d && policy_created=1
  fi
  if [ -z "$apt_updated" ]; then
    as_root apt-get update -qq > "$WORK/apt.log" 2>&1 || rc=$?
    apt_updated=1
  fi
  [ "$rc" = 0 ] && { as_root apt-get install -y -qq --no-install-recommends "$@" >> "$WORK/apt.log" 2>&1 || rc=$?; }
  [ -n "$policy_created" ] && as_root rm -f /usr/sbin/policy-rc.d
  [ "$rc" = 0 ] || tail -20 "$WORK/apt.log" >&2
  return "$rc"
}

# ---------------------------------------------------------------- tools
if ! command -v promtool > /dev/null 2>&1; then
  if out=$(apt_install prometheus 2>&1) && command -v promtool > /dev/null 2>&1; then
    ok "install promtool" "$(promtool --version 2>&1 | head -1)"
  else
    ko "install promtool" "$out"
  fi
fi

PY=
for candidate in python3 /usr/bin/python3; do
  if command -v "$candidate" > /dev/null 2>&1 && "$candidate" -c 'import yaml' > /dev/null 2>&1; then PY=$candidate; break; fi
done
if [ -z "$PY" ]; then
  if out=$(apt_install python3-yaml 2>&1) && /usr/bin/python3 -c 'import yaml' > /dev/null 2>&1; then
    PY=/usr/bin/python3; ok "install python3-yaml"
  else
    ko "install python3-yaml" "$out"
  fi
fi

if ! command -v node > /dev/null 2>&1; then ko "node" "node is required (the project's own runtime)"; fi

# ------------------------------------------------------------ prometheus
P=deploy/prometheus
if command -v promtool > /dev/null 2>&1; then
  for rules in alerts slo; do
    run "promtool check rules $rules" promtool check rules "$P/$rules.yml"
    run "promtool test rules $rules" promtool test rules "$P/$rules.test.yml"
  done
  run "promtool check config" promtool check config "$P/prometheus.yml"
fi

# ------------------------------------------------- metric catalogue (node)
# Names postroom exports: the ones declared in src/metrics/metrics.ts, plus
# prom-client's default process metrics under their stock names (process_*, nodejs_*).
CATALOGUE="$WORK/metrics.json"
if command -v node > /dev/null 2>&1; then
  if out=$(node --input-type=module - "$ROOT" "$CATALOGUE" <<'EOF' 2>&1
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
const [root, outFile] = process.argv.slice(2);
const src = readFileSync(`${root}/src/metrics/metrics.ts`, 'utf8');
const names = new Set(['up']);
const suffixes = { Histogram: ['_bucket', '_sum', '_count'], Summary: ['_sum', '_count'] };
// postroom's hot-path metrics (src/metrics/hot.ts) are prom-client's classes with a Hot prefix.
let declared = 0;
for (const m of src.matchAll(/new (?:Hot)?(Counter|Gauge|Histogram|Summary)\(\{\s*name:\s*'([a-zA-Z0-9_:]+)'/g)) {
  declared++;
  names.add(m[2]);
  for (const s of suffixes[m[1]] ?? []) names.add(m[2] + s);
}
if (declared === 0) throw new Error('no metric declarations found in src/metrics/metrics.ts');
let source = 'prom-client';
try {
  const require = createRequire(`${root}/package.json`);
  const { Registry, collectDefaultMetrics } = require('prom-client');
  const r = new Registry();
  collectDefaultMetrics({ register: r });
  for (const m of await r.getMetricsAsJSON()) {
    names.add(m.name);
    if (m.type === 'histogram') for (const s of suffixes.Histogram) names.add(m.name + s);
  }
} catch {
  source = 'built-in list (prom-client not installed)';
  for (const n of ['process_cpu_user_seconds_total', 'process_cpu_system_seconds_total', 'process_cpu_seconds_total',
    'process_start_time_seconds', 'process_resident_memory_bytes', 'process_virtual_memory_bytes', 'process_heap_bytes',
    'process_open_fds', 'process_max_fds', 'nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_min_seconds',
    'nodejs_eventloop_lag_max_seconds', 'nodejs_eventloop_lag_mean_seconds', 'nodejs_eventloop_lag_stddev_seconds',
    'nodejs_eventloop_lag_p50_seconds', 'nodejs_eventloop_lag_p90_seconds', 'nodejs_eventloop_lag_p99_seconds',
    'nodejs_active_resources', 'nodejs_active_resources_total', 'nodejs_active_handles', 'nodejs_active_handles_total',
    'nodejs_active_requests', 'nodejs_active_requests_total', 'nodejs_heap_size_total_bytes', 'nodejs_heap_size_used_bytes',
    'nodejs_external_memory_bytes', 'nodejs_heap_space_size_total_bytes', 'nodejs_heap_space_size_used_bytes',
    'nodejs_heap_space_size_available_bytes', 'nodejs_version_info', 'nodejs_gc_duration_seconds_bucket',
    'nodejs_gc_duration_seconds_sum', 'nodejs_gc_duration_seconds_count']) names.add(n);
}
writeFileSync(outFile, JSON.stringify([...names].sort()));
console.log(`${declared} declared metrics + defaults from ${source}`);
EOF
  ); then ok "metric catalogue" "$out"; else ko "metric catalogue" "$out"; rm -f "$CATALOGUE"; fi
fi

# ------------------------------------------------------- dashboard (node)
DASH=deploy/grafana/dashboards/postroom.json
if command -v node > /dev/null 2>&1 && [ -f "$CATALOGUE" ]; then
  if out=$(node --input-type=module - "$DASH" "$CATALOGUE" "$WORK/dashboard-rules.yml" <<'EOF' 2>&1
import { readFileSync, writeFileSync } from 'node:fs';
const [file, catalogueFile, rulesOut] = process.argv.slice(2);
const known = new Set(JSON.parse(readFileSync(catalogueFile, 'utf8')));
const problems = [];
let d;
try { d = JSON.parse(readFileSync(file, 'utf8')); } catch (e) { console.log(`${file}: not JSON: ${e.message}`); process.exit(1); }
if (!Array.isArray(d.panels) || typeof d.schemaVersion !== 'number' || d.elements || d.spec) problems.push('not the classic dashboard JSON model (panels[] and a numeric schemaVersion)');
if (!d.uid || !d.title) problems.push('uid and title are required');
const vars = d.templating?.list ?? [];
const ds = vars.find((v) => v.name === 'datasource');
if (!ds || ds.type !== 'datasource' || ds.query !== 'prometheus') problems.push('needs a "datasource" template variable of type datasource, query prometheus');
const usesDs = (x) => x && x.uid === '${datasource}' && (x.type === undefined || x.type === 'prometheus');
for (const v of vars) if (v.type === 'query' && !usesDs(v.datasource)) problems.push(`variable ${v.name} does not use $datasource`);
const flat = [];
for (const p of d.panels) { flat.push(p); for (const c of p.panels ?? []) flat.push(c); }
const ids = new Set();
const exprs = [];
for (const p of flat) {
  if (ids.has(p.id)) problems.push(`duplicate panel id ${p.id}`);
  ids.add(p.id);
  if (!p.gridPos) problems.push(`panel "${p.title}" has no gridPos`);
  if (p.type === 'row') continue;
  if (!usesDs(p.datasource)) problems.push(`panel "${p.title}" does not use $datasource`);
  if (!p.targets?.length) problems.push(`panel "${p.title}" has no query`);
  for (const t of p.targets ?? []) {
    if (!usesDs(t.datasource)) problems.push(`panel "${p.title}" query ${t.refId} does not use $datasource`);
    if (!t.expr) { problems.push(`panel "${p.title}" query ${t.refId} has no expr`); continue; }
    const bare = t.expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
    const metrics = bare.match(/\b(?:postroom|process|nodejs)_[a-zA-Z0-9_]+/g) ?? [];
    if (!metrics.length && !/\bup\{/.test(bare)) problems.push(`panel "${p.title}" query ${t.refId} uses no metric postroom exports`);
    for (const m of metrics) if (!known.has(m)) problems.push(`panel "${p.title}": ${m} is not exported (src/metrics/metrics.ts)`);
    exprs.push({ panel: p.title, expr: t.expr });
  }
}
const sections = flat.filter((p) => p.type === 'row').map((p) => p.title.toLowerCase());
for (const want of ['ingress', 'inbox', 'worker', 'reconciler', 'api', 'process']) {
  if (!sections.some((s) => s.includes(want))) problems.push(`no row for ${want}`);
}
// For promtool: substitute Grafana's variables and wrap every expression in a recording rule.
const subst = (e) => e.replaceAll('$__rate_interval', '1m').replaceAll('$__interval', '1m').replaceAll('$__range', '1h').replace(/\$\{?(\w+)\}?/g, '.*');
const rules = { groups: [{ name: 'dashboard', rules: exprs.map((x, i) => ({ record: `dashboard:expr_${i}`, expr: subst(x.expr) })) }] };
writeFileSync(rulesOut, JSON.stringify(rules));
if (problems.length) { console.log(problems.join('\n')); process.exit(1); }
console.log(`${flat.filter((p) => p.type !== 'row').length} panels, ${exprs.length} queries, all on $datasource and known metrics`);
EOF
  ); then ok "dashboard model" "$out"; else ko "dashboard model" "$out"; fi
  if [ -f "$WORK/dashboard-rules.yml" ] && command -v promtool > /dev/null 2>&1; then
    run "dashboard PromQL parses" promtool check rules "$WORK/dashboard-rules.yml"
  fi
fi

# ------------------------------------------------- YAML, compose, k8s, alerts
if [ -n "$PY" ]; then
  run "YAML parses" "$PY" deploy/checks/manifests.py yaml "$ROOT"
  run "compose structure" "$PY" deploy/checks/manifests.py compose "$ROOT"
  run "k8s structure" "$PY" deploy/checks/manifests.py k8s "$ROOT"
  if [ -f "$CATALOGUE" ]; then
    run "alerts: tests, runbook, metrics" "$PY" deploy/checks/manifests.py alerts "$ROOT" "$CATALOGUE"
  else
    run "alerts: tests, runbook" "$PY" deploy/checks/manifests.py alerts "$ROOT"
  fi
fi

# -------------------------------------------------------- optional tools
if command -v kubectl > /dev/null 2>&1 && kubectl kustomize --help > /dev/null 2>&1; then
  run "kubectl kustomize deploy/k8s" bash -c 'n=$(kubectl kustomize deploy/k8s | grep -c "^kind:") && echo "$n objects rendered"'
else
  skip "kubectl kustomize deploy/k8s" "(kubectl not installed)"
fi

compose_check() {
  # Validate with the example env file standing in for the real (uncommitted) one.
  local tmp=deploy/.check-compose.tmp.yml
  sed -e 's/^\(\s*-\s*\)postroom\.env\(\s*#.*\)\?$/\1postroom.env.example/' deploy/docker-compose.yml > "$tmp"
  if docker compose version > /dev/null 2>&1; then
    docker compose -f "$tmp" config -q; local rc=$?
  else
    # docker-compose v1 predates the top-level `name:` key.
    sed -i '/^name:/d' "$tmp"
    docker-compose -f "$tmp" config -q; local rc=$?
  fi
  rm -f "$tmp"
  return $rc
}
if docker compose version > /dev/null 2>&1 || command -v docker-compose > /dev/null 2>&1; then
  run "compose config" compose_check
else
  skip "compose config" "(docker compose not installed)"
fi

# ------------------------------------------------------------- Dockerfile
dockerfile_check() {
  local f=deploy/Dockerfile problems=()
  grep -qE '^FROM .*:latest' "$f" && problems+=("a base image uses :latest")
  # A maintained line (README, "Supported Node lines"), pinned to a minor release.
  grep -qE '^ARG NODE_IMAGE=node:(2[4-9]|[3-9][0-9])\.[0-9]+-[a-z]+-slim$' "$f" || problems+=("NODE_IMAGE is not a pinned node:<24 or newer>.x-<debian>-slim tag")
  [ "$(grep -c '^FROM ' "$f")" -ge 2 ] || problems+=("not multi-stage")
  grep -q -- '--omit=dev' "$f" || problems+=("runtime dependencies are not production-only")
  grep -qE '^USER (node|1000)' "$f" || problems+=("no non-root USER")
  grep -q '^HEALTHCHECK' "$f" || problems+=("no HEALTHCHECK")
  grep -qE '^ENTRYPOINT \["/usr/bin/tini", "--"' "$f" || problems+=("tini is not PID 1")
  grep -q '^EXPOSE 8080' "$f" || problems+=("does not EXPOSE 8080")
  for p in dist bin migrations package.json; do grep -qE "^COPY .*\b$p\b" "$f" || problems+=("does not copy $p"); done
  grep -qxF 'deploy' .dockerignore || problems+=(".dockerignore does not exclude deploy/")
  grep -qxF '**/node_modules' .dockerignore || problems+=(".dockerignore does not exclude node_modules")
  if [ ${#problems[@]} -gt 0 ]; then printf '%s\n' "${problems[@]}"; return 1; fi
  echo "multi-stage, pinned, production deps, non-root, tini, healthcheck"
}
run "Dockerfile" dockerfile_check

# ---------------------------------------------------------------- summary
elapsed=$(( $(date +%s) - START ))
if [ "$failed" -gt 0 ]; then
  echo "check-deploy: FAILED ${failed} of $((passed + failed)) checks (${failures[*]}), ${skipped} skipped, ${elapsed}s"
  exit 1
fi
echo "check-deploy: ${passed} passed, 0 failed, ${skipped} skipped, ${elapsed}s"
