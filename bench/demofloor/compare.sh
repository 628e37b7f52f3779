#!/usr/bin/env bash
# GET /api/todos/{id} and a 50-row list (GET /api/todos?limit=50) of `tablegate demo` (default flags) against demofloor, the hand-written floor
# over the demo's own table and policy (bench/demofloor), side by side in one run and the same
# Postgres (the demo's). wrk -t2 -c64, a 2 s warm-up, rounds interleaved, medians; the last line reads
#   perf (demo floor): GET /api/todos/{id} N req/s = R x demo floor (M req/s), non-2xx K
# Run from the project root (make bench-floor). Knobs: PERF_DUR (10s), PERF_ROUNDS (3),
# PERF_DEMO_FLAGS (extra demo flags).
set -u
DUR=${PERF_DUR:-10s}; ROUNDS=${PERF_ROUNDS:-3}
root=$(pwd)
tmp=$(mktemp -d -t demofloor.XXXXXX)
demo_pid=""; floor_pid=""
cleanup() {
  [ -n "$floor_pid" ] && { kill "$floor_pid" 2>/dev/null; wait "$floor_pid" 2>/dev/null; }
  if [ -n "$demo_pid" ]; then
    kill -TERM -- -"$demo_pid" 2>/dev/null
    for _ in $(seq 1 40); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$demo_pid" 2>/dev/null && kill -KILL -- -"$demo_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
die() { echo "perf (demo floor): $*"; exit 1; }
for t in wrk psql curl jq; do command -v $t >/dev/null || die "needs $t (apt-get install wrk postgresql-client curl jq)"; done
go build -o "$tmp/tablegate" ./cmd/tablegate || die "build of tablegate failed"
(cd bench && go build -o "$tmp/demofloor" ./demofloor) || die "build of demofloor failed"
cd / || exit 1

setsid "$tmp/tablegate" demo ${PERF_DEMO_FLAGS:-} --addr 127.0.0.1:0 --print-env "$tmp/env" >"$tmp/demo.log" 2>&1 &
demo_pid=$!
for _ in $(seq 1 180); do
  grep -q '^USER_TOKEN=' "$tmp/env" 2>/dev/null && break
  kill -0 "$demo_pid" 2>/dev/null || die "demo exited: $(tail -1 "$tmp/demo.log")"
  sleep 0.5
done
sleep 0.5
set -a; . "$tmp/env"; set +a
[ -n "${USER_TOKEN:-}" ] || die "demo wrote no USER_TOKEN"

# 1000 more rows the user reads (tenant A), as the shared comparison adds.
psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qc "insert into public.todos (tenant_id, owner_id, title)
  select '$TENANT_A', '$USER_ID', 'bench ' || g from generate_series(1, 1000) g" >/dev/null || die "cannot add rows"
psql "$DATABASE_URL" -Atc "select id from public.todos where tenant_id = '$TENANT_A' order by id" >"$tmp/ids"

port=$((20000 + RANDOM % 20000))
"$tmp/demofloor" -addr "127.0.0.1:$port" -database-url "$DATABASE_URL" -jwks-url "$JWKS_URL" >"$tmp/floor.log" 2>&1 &
floor_pid=$!
FLOOR=http://127.0.0.1:$port
for _ in $(seq 1 50); do curl -s -o /dev/null "$FLOOR/api/todos/1" && break; sleep 0.1; done
# Both answer the same row with the same fields.
id=$(head -1 "$tmp/ids")
a=$(curl -s -H "Authorization: Bearer $USER_TOKEN" "$BASE_URL/api/todos/$id" | jq -cS '{id, tenant_id, owner_id, title, done}')
b=$(curl -s -H "Authorization: Bearer $USER_TOKEN" "$FLOOR/api/todos/$id" | jq -cS '{id, tenant_id, owner_id, title, done}')
[ -n "$a" ] && [ "$a" = "$b" ] || die "the demo and demofloor disagree on todo $id: $a vs $b"
a=$(curl -s -H "Authorization: Bearer $USER_TOKEN" "$BASE_URL/api/todos?limit=50" | jq -c '[.items[].id]')
b=$(curl -s -H "Authorization: Bearer $USER_TOKEN" "$FLOOR/api/todos?limit=50" | jq -c '[.items[].id]')
[ -n "$a" ] && [ "$a" = "$b" ] || die "the demo and demofloor list different rows: $a vs $b"

cat >"$tmp/ids.lua" <<'LUA'
local paths = {}
for line in io.lines(os.getenv("IDS_FILE")) do if line ~= "" then paths[#paths + 1] = "/api/todos/" .. line end end
function init(args) math.randomseed(os.time()) end
function request() return wrk.format("GET", paths[math.random(#paths)]) end
function done(summary, latency, requests)
  io.write(string.format('{"rps":%.0f,"non2xx":%d}\n', summary.requests / (summary.duration / 1e6), summary.errors.status))
end
LUA
cat >"$tmp/list.lua" <<'LUA'
function request() return wrk.format("GET", "/api/todos?limit=50") end
function done(summary, latency, requests)
  io.write(string.format('{"rps":%.0f,"non2xx":%d}\n', summary.requests / (summary.duration / 1e6), summary.errors.status))
end
LUA
load() { # $1 origin, $2 script: prints "rps non2xx"
  IDS_FILE=$tmp/ids wrk -t2 -c64 -d2s -s "$tmp/$2.lua" -H "Authorization: Bearer $USER_TOKEN" "$1" >/dev/null 2>&1
  IDS_FILE=$tmp/ids wrk -t2 -c64 -d"$DUR" -s "$tmp/$2.lua" -H "Authorization: Bearer $USER_TOKEN" "$1" 2>/dev/null | grep '^{' | jq -r '"\(.rps) \(.non2xx)"'
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
P=(); F=(); LP=(); LF=(); bad=0
for r in $(seq 1 "$ROUNDS"); do
  read -r p pb < <(load "$BASE_URL" ids); read -r f fb < <(load "$FLOOR" ids)
  read -r lp lpb < <(load "$BASE_URL" list); read -r lf lfb < <(load "$FLOOR" list)
  echo "round $r: get project $p req/s, demo floor $f req/s; list 50 project $lp req/s, demo floor $lf req/s"
  P+=("$p"); F+=("$f"); LP+=("$lp"); LF+=("$lf"); bad=$((bad + pb + fb + lpb + lfb))
done
ratio() { awk -v p="$1" -v f="$2" 'BEGIN { printf "%.2f", p / f }'; }
Pm=$(median "${P[@]}"); Fm=$(median "${F[@]}"); LPm=$(median "${LP[@]}"); LFm=$(median "${LF[@]}")
echo "perf (demo floor): list 50 $LPm req/s = $(ratio "$LPm" "$LFm")x demo floor ($LFm req/s)"
echo "perf (demo floor): GET /api/todos/{id} $Pm req/s = $(ratio "$Pm" "$Fm")x demo floor ($Fm req/s), non-2xx $bad"
