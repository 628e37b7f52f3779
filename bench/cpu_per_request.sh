#!/usr/bin/env bash
# CPU per request of GET /api/todos/{id}: tablegate's process and Postgres, for `tablegate demo`
# (default flags) and the hand-written servers of the outside comparison, in one run and the same
# Postgres (the demo's throwaway cluster):
#   project   = tablegate demo, one user's token, >= 1000 rows of tenant A
#   floor     = the shared floor's rlsget -db batch2 -jwt es256cache (database benchfloor)
#   naive     = rlsget -db naive (five round trips)
#   demofloor = bench/demofloor, the same hand-written shape over the demo's own table and policy
#   project-list, demofloor-list (not by default) = GET /api/todos?limit=50 of the demo and demofloor
# Each round runs wrk -t2 -c64 against each server in turn (2 s warm-up, then PERF_DUR); around the
# measured run it reads /proc:
#   server   utime+stime of the server process (every thread);
#   postgres utime+stime of every process of the cluster: the postmaster, its live children (the
#            backends, the background processes) and, through the postmaster's cutime+cstime,
#            the children that ended during the run;
# and divides by the requests wrk completed. Both are CPU time, not wall time. Medians over rounds;
# the last line gives the two ratios to the floor the targets are stated on (<= 1.3x each).
# Run from the project root. Knobs: PERF_DUR (10s), PERF_ROUNDS (3), PERF_SERVERS (project floor
# naive demofloor), PERF_DEMO_FLAGS (extra demo flags), BENCH_FLOOR (the shared floor's folder;
# default ../shared/bench-floor or /work/shared/bench-floor), PERF_DEBUG=1 (after each run, the
# Postgres processes that used the most CPU, and how many ended during it).
# Each sample waits until the cluster's CPU holds still: when wrk stops, the servers cancel the
# requests in flight and pgx closes those connections, so backends end (and new ones start) around
# every run; their CPU is counted once they are reaped. Autovacuum and checkpoints count too (as they
# would in any run); on a loaded machine read the medians, not one round.
# Needs wrk, jq, psql, curl, and /proc of the demo's Postgres (same machine; run as root or as the
# user the cluster runs as).
set -u
DUR=${PERF_DUR:-10s}; ROUNDS=${PERF_ROUNDS:-3}
SERVERS=${PERF_SERVERS:-project floor naive demofloor}
root=$(pwd)
floor_dir=${BENCH_FLOOR:-}
if [ -z "$floor_dir" ]; then
  for d in ../shared/bench-floor ../../shared/bench-floor /work/shared/bench-floor; do
    [ -x "$d/compare.sh" ] && { floor_dir=$(cd "$d" && pwd); break; }
  done
fi
[ -n "$floor_dir" ] && [ -d "$floor_dir" ] && floor_dir=$(cd "$floor_dir" && pwd)
tmp=$(mktemp -d -t cpureq.XXXXXX)
demo_pid=""; srv_pid=""; floor_made=""; cleaned=""
cleanup() {
  [ -n "$cleaned" ] && return; cleaned=1
  stop_srv
  if [ -n "$floor_made" ]; then
    psql "$DATABASE_URL" -q -c "drop database if exists benchfloor with (force)" \
      -c "drop role if exists bf_auth_direct, bf_reader, bf_authenticator" >/dev/null 2>&1
  fi
  if [ -n "$demo_pid" ]; then
    kill -TERM -- -"$demo_pid" 2>/dev/null
    for _ in $(seq 1 40); do kill -0 "$demo_pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$demo_pid" 2>/dev/null && kill -KILL -- -"$demo_pid" 2>/dev/null
    wait "$demo_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT; trap 'exit 130' INT; trap 'exit 143' TERM
die() { cleanup; echo "cpu: $*"; exit 1; }
stop_srv() { [ -n "$srv_pid" ] && { kill "$srv_pid" 2>/dev/null; wait "$srv_pid" 2>/dev/null; }; srv_pid=""; }
settle() { # after stop_srv: wait (10 s at most) until the server's backends have ended and been reaped,
  # so that their CPU is in the postmaster's cutime before the next run's first sample
  local i; for i in $(seq 1 100); do [ "$(nkids)" -le "$kids_idle" ] && return; sleep 0.1; done
}
free_port() { local p; while :; do p=$((20000 + RANDOM % 20000)); (: <>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }; done; }
with_db() { # $1 a Postgres URL or key=value conninfo, $2 a database name: the same server, that database
  case $1 in
    postgres://*|postgresql://*)
      local pre=${1%%\?*} q="" auth
      [ "$pre" != "$1" ] && q="?${1#*\?}"
      auth=${pre#*://}; auth=${auth%%/*}
      echo "${pre%%://*}://$auth/$2$q" ;;
    *) echo "$1 dbname=$2" ;;
  esac
}
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
for t in wrk psql curl jq; do command -v $t >/dev/null || die "needs $t (apt-get install wrk postgresql-client curl jq)"; done
HZ=$(getconf CLK_TCK)

# /proc/PID/stat after the command name (which may hold spaces): field 3 is state, so utime and
# stime are fields 14 and 15, cutime and cstime 16 and 17, ppid 4.
stat_fields() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; echo "${s##*) }"; }
proc_ticks() { # $1 pid: utime+stime
  local f; f=$(stat_fields "$1") || { echo 0; return; }
  echo "$f" | awk '{ print $12 + $13 }'
}
cluster_stat() { # "pid ticks" of the postmaster $pm (utime+stime+cutime+cstime: with its children that
  # ended and were reaped) and of each process whose parent it is (utime+stime), from one pass over
  # /proc; a process that ends while it is read is skipped (getline, not awk's own input, which
  # stops at a file that is gone)
  awk -v pm="$pm" 'BEGIN {
      for (i = 1; i < ARGC; i++) {
        if ((getline line < ARGV[i]) > 0) {
          pid = ARGV[i]; sub(/^\/proc\//, "", pid); sub(/\/stat$/, "", pid)
          sub(/^.*\) /, "", line); split(line, f, " ")
          if (pid == pm) print pid, f[12] + f[13] + f[14] + f[15]
          else if (f[2] == pm) print pid, f[12] + f[13]
        }
        close(ARGV[i])
      }
      exit
    }' /proc/[0-9]*/stat
}
quiet() { # wait (10 s at most) until the cluster's CPU total holds still for 0.2 s with no child
  # exiting: when wrk stops, the servers cancel their requests in flight and pgx closes those
  # connections, whose backends show less CPU while they exit than once they are reaped
  local a b i
  a=$(pg_ticks)
  for i in $(seq 1 50); do
    sleep 0.2; b=$(pg_ticks)
    [ "$a" = "$b" ] && ! grep -qs '^[0-9]* ([^)]*) Z '"$pm"' ' /proc/[0-9]*/stat && return
    a=$b
  done
}
pg_ticks() { cluster_stat | awk '{ t += $2 } END { print t + 0 }'; }
pg_each() { cluster_stat | sort -k1,1; }
nkids() { cluster_stat | awk 'END { print NR - 1 }'; }

# 1. Build tablegate, demofloor and the shared floor's rlsget (retargeted as compare.sh does it).
go build -o "$tmp/tablegate" ./cmd/tablegate 2>"$tmp/build.log" || die "build of tablegate failed: $(grep -m1 -v '^#' "$tmp/build.log")"
case " $SERVERS " in *" demofloor "*)
  (cd bench && go build -o "$tmp/demofloor" ./demofloor) 2>"$tmp/build.log" || die "build of demofloor failed: $(grep -m1 -v '^#' "$tmp/build.log")";;
esac
case " $SERVERS " in *" floor "*|*" naive "*)
  [ -n "$floor_dir" ] && [ -d "$floor_dir/httpbench/rlsget" ] || die "no shared floor (set BENCH_FLOOR=DIR holding compare.sh, httpbench/ and sql/), or leave floor and naive out of PERF_SERVERS"
  mkdir -p "$tmp/httpbench" && cp -r "$floor_dir/httpbench/go.mod" "$floor_dir/httpbench/go.sum" "$floor_dir/httpbench/rlsget" "$tmp/httpbench/"
  sed -i -e 's/dbname=bench /dbname=benchfloor /' -e 's/user := "authenticator"/user := "bf_authenticator"/' "$tmp/httpbench/rlsget/main.go"
  grep -q 'dbname=benchfloor ' "$tmp/httpbench/rlsget/main.go" && grep -q '"bf_authenticator"' "$tmp/httpbench/rlsget/main.go" \
    || die "cannot retarget rlsget's DSN ($floor_dir/httpbench/rlsget/main.go changed?)"
  (cd "$tmp/httpbench" && GOWORK=off go build -o "$tmp/rlsget" ./rlsget) >"$tmp/build.log" 2>&1 \
    || die "rlsget build failed: $(grep -m1 -v '^#' "$tmp/build.log")";;
esac
cd / || exit 1

# 2. The demo in its own process group (its throwaway cluster unless PERF_DEMO_FLAGS says otherwise).
setsid "$tmp/tablegate" demo ${PERF_DEMO_FLAGS:-} --addr 127.0.0.1:0 --print-env "$tmp/env" >"$tmp/demo.log" 2>&1 &
demo_pid=$!
for _ in $(seq 1 180); do
  grep -q '^\(export \)\{0,1\}USER_TOKEN=' "$tmp/env" 2>/dev/null && break
  kill -0 "$demo_pid" 2>/dev/null || die "demo exited: $(tail -1 "$tmp/demo.log")"
  sleep 0.5
done
sleep 0.5
set -a; . "$tmp/env"; set +a
[ -n "${USER_TOKEN:-}" ] && [ -n "${DATABASE_URL:-}" ] && [ -n "${BASE_URL:-}" ] || die "demo wrote no USER_TOKEN, DATABASE_URL or BASE_URL"
BASE_URL=${BASE_URL%/}
tg_pid=$demo_pid   # setsid execs when the job is not a group leader; else the demo is its child
[ "$(cat "/proc/$tg_pid/comm" 2>/dev/null)" = tablegate ] || tg_pid=$(pgrep -g "$demo_pid" -x tablegate | head -1)
[ -n "$tg_pid" ] || die "cannot find the demo's tablegate process"
[ "$(psql "$DATABASE_URL" -Atc 'show is_superuser' 2>/dev/null)" = on ] || die "DATABASE_URL is not a superuser (the run adds rows and a database)"
datadir=$(psql "$DATABASE_URL" -Atc 'show data_directory') || die "cannot connect to DATABASE_URL"
pm=$(head -1 "$datadir/postmaster.pid" 2>/dev/null)
[ -n "$pm" ] && [ "$(nkids)" -gt 0 ] || die "cannot read /proc of the demo's Postgres (not on this machine, or another user's: run as root)"
read -r pg_host pg_port < <(psql "$DATABASE_URL" -Atc '\echo :HOST :PORT')

# 3. 1000 more rows the user reads (tenant A); the ids the GETs draw from.
psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -qc "insert into public.todos (tenant_id, owner_id, title)
  select '$TENANT_A', '$USER_ID', 'bench ' || g from generate_series(1, 1000) g" >/dev/null || die "cannot add rows"
psql "$DATABASE_URL" -Atc "select id from public.todos where tenant_id = '$TENANT_A' order by id" >"$tmp/project.ids"
id=$(head -1 "$tmp/project.ids")
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $USER_TOKEN" "$BASE_URL/api/todos/$id")
[ "$code" = 200 ] || die "GET /api/todos/$id answered $code before the load"

# 4. The shared floor's schema in database benchfloor, with its own login roles (as compare.sh).
case " $SERVERS " in *" floor "*|*" naive "*)
  sed -e 's/^drop database if exists bench;/drop database if exists benchfloor with (force);/' \
      -e 's/^create database bench;/create database benchfloor;/' -e 's/^\\c bench$/\\c benchfloor/' \
      -e 's/\bauthenticator\b/bf_authenticator/g' -e 's/\breader\b/bf_reader/g' -e 's/\bauth_direct\b/bf_auth_direct/g' \
      "$floor_dir/sql/schema.sql" >"$tmp/floor.sql"
  floor_made=1
  psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -q -f "$tmp/floor.sql" >"$tmp/floor.log" 2>&1 \
    || die "floor schema failed: $(grep -m1 ERROR "$tmp/floor.log" || tail -1 "$tmp/floor.log")"
  psql "$(with_db "$DATABASE_URL" benchfloor)" -Atc "select id from items where owner = md5('user-42')::uuid order by id" >"$tmp/floor.ids"
  [ "$(wc -l <"$tmp/floor.ids")" -ge 100 ] || die "floor: benchfloor.items has no rows for the fixed owner";;
esac

# start SERVER: sets srv_pid, origin, prefix, ids, tok (srv_pid empty for the demo, which stays up).
start() {
  srv_pid=""
  case $1 in
    project|project-list) origin=$(echo "$BASE_URL" | sed -E 's#^([a-z]+://[^/]+).*#\1#'); prefix="${BASE_URL#"$origin"}/api/todos/"
      ids=$tmp/project.ids; tok=$USER_TOKEN; cpu_pid=$tg_pid; listify "$1"; return 0;;
    demofloor-list) start demofloor || return 1; listify "$1"; return 0;;
    *-list) die "PERF_SERVERS: only project-list and demofloor-list have a list";;
    demofloor) local port; port=$(free_port)
      "$tmp/demofloor" -addr "127.0.0.1:$port" -database-url "$DATABASE_URL" -jwks-url "$JWKS_URL" >>"$tmp/srv.log" 2>&1 &
      srv_pid=$!; origin=http://127.0.0.1:$port; prefix=/api/todos/; ids=$tmp/project.ids; tok=$USER_TOKEN;;
    floor|naive) local port mode=batch2; port=$(free_port); [ "$1" = naive ] && mode=naive; rm -f "$tmp/tok"
      "$tmp/rlsget" -addr "127.0.0.1:$port" -db "$mode" -jwt es256cache -pghost "$pg_host" -pgport "$pg_port" \
        -token-file "$tmp/tok" >>"$tmp/srv.log" 2>&1 &
      srv_pid=$!; origin=http://127.0.0.1:$port; prefix=/items/; ids=$tmp/floor.ids; tok="";;
  esac
  cpu_pid=$srv_pid
  for _ in $(seq 1 100); do
    [ -z "$tok" ] && [ -s "$tmp/tok" ] && tok=$(cat "$tmp/tok")
    if [ -n "$tok" ]; then
      code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $tok" "$origin$prefix$(head -1 "$ids")")
      [ "$code" = 200 ] && return 0
    fi
    kill -0 "$srv_pid" 2>/dev/null || break
    sleep 0.1
  done
  stop_srv; return 1
}

listify() { # $1 a server name: for NAME-list, GET /api/todos?limit=50 instead of a row by id
  case $1 in *-list) prefix=${prefix%/}; ids=$tmp/list.ids;; esac
}
echo '?limit=50' >"$tmp/list.ids"

cat >"$tmp/ids.lua" <<'LUA'
local paths = {}
for line in io.lines(os.getenv("IDS_FILE")) do
  if line ~= "" then paths[#paths + 1] = os.getenv("PREFIX") .. line end
end
local nthreads = 0
function setup(thread) nthreads = nthreads + 1; thread:set("tid", nthreads) end
function init(args) math.randomseed(os.time() * 100 + (tid or 0)) end
function request() return wrk.format("GET", paths[math.random(#paths)]) end
function done(summary, latency, requests)
  io.write(string.format('{"requests":%d,"rps":%.0f,"bad":%d}\n', summary.requests,
    summary.requests / (summary.duration / 1e6), summary.errors.status + summary.errors.connect
    + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA
# measure LABEL: warm-up, then the measured run between two /proc samples; prints the round's line
# and sets rps srv_us pg_us bad.
measure() {
  PREFIX=$prefix IDS_FILE=$ids wrk -t2 -c64 -d2s -s "$tmp/ids.lua" -H "Authorization: Bearer $tok" "$origin" >/dev/null 2>&1
  local s0 p0 s1 p1 res reqs
  quiet; s0=$(proc_ticks "$cpu_pid"); p0=$(pg_ticks)
  [ -n "${PERF_DEBUG:-}" ] && pg_each >"$tmp/each0"
  res=$(PREFIX=$prefix IDS_FILE=$ids wrk -t2 -c64 -d"$DUR" -s "$tmp/ids.lua" -H "Authorization: Bearer $tok" "$origin" 2>"$tmp/wrk.err" | grep '^{' | tail -1)
  s1=$(proc_ticks "$cpu_pid"); quiet; p1=$(pg_ticks)
  if [ -n "${PERF_DEBUG:-}" ]; then # the five Postgres processes that used the most CPU in the run
    pg_each >"$tmp/each1"
    join -a2 -e0 -o 2.1,1.2,2.2 "$tmp/each0" "$tmp/each1" | awk '{ print $3 - $2, $1 }' | sort -rn | head -5 |
      while read -r d p; do echo "  $d ticks pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-80 || echo ended)"; done
    join -v1 "$tmp/each0" "$tmp/each1" | awk '{ n++; t += $2 } END { printf "  ended during the run: %d processes, %d ticks at the start\n", n, t }'
    echo "  processes: $(wc -l <"$tmp/each0") -> $(wc -l <"$tmp/each1")"
  fi
  [ -n "$res" ] || return 1
  read -r reqs rps bad < <(echo "$res" | jq -r '[.requests, .rps, .bad] | @tsv')
  [ "$reqs" -gt 0 ] || return 1
  srv_us=$(awk -v d=$((s1 - s0)) -v n="$reqs" -v hz="$HZ" 'BEGIN { printf "%.1f", d * 1e6 / hz / n }')
  pg_us=$(awk -v d=$((p1 - p0)) -v n="$reqs" -v hz="$HZ" 'BEGIN { printf "%.1f", d * 1e6 / hz / n }')
  printf 'round %d %-14s %7.0f req/s  server %6.1f µs/req  postgres %6.1f µs/req  errors %d\n' "$r" "$1" "$rps" "$srv_us" "$pg_us" "$bad"
}

# The rows just written vacuumed and analyzed, and a checkpoint, now: else autovacuum and the
# checkpointer work during the first runs, and their CPU is charged to those runs' requests.
psql "$DATABASE_URL" -q -c "vacuum analyze public.todos" -c checkpoint >/dev/null 2>&1 || die "cannot vacuum public.todos"
quiet
kids_idle=$(nkids)   # the cluster's processes with only the demo connected
# Idle: what the cluster and the demo burn with no load (charged to every run's requests alike).
i0=$(pg_ticks); t0=$(proc_ticks "$tg_pid"); sleep 2; i1=$(pg_ticks); t1=$(proc_ticks "$tg_pid")
echo "setup: demo $BASE_URL (pid $tg_pid), Postgres $pg_host:$pg_port (postmaster $pm), $(wc -l <"$tmp/project.ids") todo ids; wrk -t2 -c64 -d$DUR, 2 s warm-up, $ROUNDS rounds of: $SERVERS"
echo "idle: postgres $(( (i1 - i0) * 1000 / HZ / 2 )) ms CPU/s, demo $(( (t1 - t0) * 1000 / HZ / 2 )) ms CPU/s"
declare -A RPS SRV PG
errs=0
for r in $(seq 1 "$ROUNDS"); do
  for s in $SERVERS; do
    start "$s" || die "$s did not come up: $(tail -1 "$tmp/srv.log" 2>/dev/null)"
    measure "$s" || die "wrk against $s failed: $(tail -1 "$tmp/wrk.err")"
    stop_srv; settle
    RPS[$s]="${RPS[$s]:-} $rps"; SRV[$s]="${SRV[$s]:-} $srv_us"; PG[$s]="${PG[$s]:-} $pg_us"; errs=$((errs + bad))
  done
done

# Medians, then the ratios to the floor (targets: <= 1.3x for the server process and for Postgres).
declare -A MS MP
for s in $SERVERS; do
  # shellcheck disable=SC2086
  MS[$s]=$(median ${SRV[$s]}); MP[$s]=$(median ${PG[$s]})
  # shellcheck disable=SC2086
  printf 'median %-14s %7.0f req/s  server %6.1f µs/req  postgres %6.1f µs/req\n' "$s" "$(median ${RPS[$s]})" "${MS[$s]}" "${MP[$s]}"
done
cleanup
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }
line="cpu: GET /api/todos/{id} µs per request"
for ref in floor demofloor; do
  case " $SERVERS " in *" project "*) ;; *) break;; esac
  case " $SERVERS " in *" $ref "*)
    line="$line; vs $ref: tablegate $(ratio "${MS[project]}" "${MS[$ref]}")x (${MS[project]} vs ${MS[$ref]}), postgres $(ratio "${MP[project]}" "${MP[$ref]}")x (${MP[project]} vs ${MP[$ref]})";;
  esac
done
case " $SERVERS " in *" project-list "*) case " $SERVERS " in *" demofloor-list "*)
  line="$line; list of 50 vs demofloor: tablegate $(ratio "${MS[project-list]}" "${MS[demofloor-list]}")x (${MS[project-list]} vs ${MS[demofloor-list]}), postgres $(ratio "${MP[project-list]}" "${MP[demofloor-list]}")x (${MP[project-list]} vs ${MP[demofloor-list]})";;
esac;; esac
[ "$errs" -gt 0 ] && line="$line; $errs errors (run invalid)"
echo "$line"
[ "$errs" = 0 ]
