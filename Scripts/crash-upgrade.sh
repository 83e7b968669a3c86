#!/usr/bin/env bash
# Crash harness for `storerescue upgrade`: kill -9 at random instants, then check the store.
#
# A pristine V1 store of the benchmarks' catalog (Scripts/bench-lib.sh; --rows, default
# 1,000,000 rows, ~300 MB) is made once and cached. Then, --runs times (default 100):
#   1. a fresh folder gets a copy of the pristine store, and sqlite3 appends 200–1,200 rows with
#      checkpoint-on-close off (`.dbconfig no_ckpt_on_close on`, `PRAGMA wal_autocheckpoint=0`),
#      so the `-wal` beside the copy holds committed rows the main file does not have;
#   2. `storerescue upgrade STORE --catalog C --backup-dir DIR --json` starts, and is killed with
#      SIGKILL after a random delay in [0, T] (T: the wall time of an uncut run: one measured
#      first, then the latest run that went uncut — a killed run that finished first, or a second
#      run of step 4 that upgraded — so T follows the machine's load).
#      The publication (StoreReplacement: settle, lock, compare, rename) is under a second of
#      T, so odd runs draw the delay from all of [0, T] and even runs from its end, [P, T], where
#      P is T less twice that run's verify + publish phases and a second;
#   3. the store must be the original or the upgrade, whole: `match --json` says exact V1 or exact
#      V4, `PRAGMA integrity_check` is ok and the row count is the copy's, -wal rows included
#      (a -wal of one database beside the other would fail these);
#   4. whatever the killed run left (`*.storerescue-tmp-*` beside the store or in the backup
#      folder) is backdated 2 hours (`touch -d`), `upgrade` runs again, and must exit 0
#      (upgraded) or 2 (already current) with the store exact V4, every row there, and no
#      temporary left beside the store (the second run sweeps the stale ones).
# A store left broken (step 3) stops the harness at once: its folder is kept in
# WORKDIR/failed-<run> with the killed run's stderr and delay, for reproduction. Other failures
# are counted (and kept likewise) and the harness goes on. Prints a summary table; exit 1 on any
# failure.
#
#   Scripts/crash-upgrade.sh [--runs N] [--rows N] [--keep-going] [WORKDIR]
#   (default WORKDIR: bench-work/crash, gitignored; BENCH_BIN: a binary instead of building one)
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/bench-lib.sh
trap 'echo "$0: line $LINENO: a command failed (status $?)" >&2' ERR
RUNS=100
ROWS=1000000
KEEP_GOING=0
work=bench-work/crash
while [ $# -gt 0 ]; do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    --keep-going) KEEP_GOING=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "unknown option $1" >&2; exit 64 ;;
    *) work=$1; shift ;;
  esac
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
results="$work/results.txt"

bench_tools sqlite3 python3 libsqlite3-dev
bench_binary "$work"
bench_catalog "$work"
pristine="$work/pristine-v1-$ROWS.sqlite"
bench_make_store "$pristine" "$ROWS"
pristine_rows=$(sqlite3 "$pristine" "SELECT count(*) FROM ZENTRY")
pristine_bytes=$(stat -c %s "$pristine")

run_dir="$work/run"
store="$run_dir/store/Ledger.sqlite"
backups="$run_dir/backups"

# fresh_copy: the pristine store in a fresh folder, plus committed rows left in its -wal;
# sets EXPECTED_ROWS and WAL_BYTES.
fresh_copy() {
  rm -rf "$run_dir"
  mkdir -p "$run_dir/store"
  cp "$pristine" "$store"
  local extra=$((200 + RANDOM % 1001))
  sqlite3 "$store" >/dev/null <<SQL
.dbconfig no_ckpt_on_close on
PRAGMA wal_autocheckpoint = 0;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $extra)
INSERT INTO ZENTRY (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZBODY, ZCREATEDAT, ZQUANTITY, ZISARCHIVED, ZAUTHOR, ZLEGACYCODE)
  SELECT (SELECT max(Z_PK) FROM ZENTRY) + i, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Entry'), 1,
         'written after the backup copy ' || i, replace(hex(zeroblob(75 + i % 25)), '00', 'ww'), 700000000.0 + i, i % 50, 0,
         'WAL Writer', 'LC-WAL-' || i
  FROM n;
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZENTRY) WHERE Z_NAME = 'Entry';
COMMIT;
SQL
  EXPECTED_ROWS=$((pristine_rows + extra))
  WAL_BYTES=$(stat -c %s "$store-wal" 2>/dev/null || echo 0)
  if [ "$WAL_BYTES" -eq 0 ]; then echo "the copy's -wal is empty: the harness cannot test WAL content" >&2; exit 1; fi
}

# leftovers DIR: temporaries of the marker in DIR (not recursive).
leftovers() { [ -d "$1" ] || return 0; find "$1" -maxdepth 1 -name '*.storerescue-tmp-*' -printf '%f\n' | sort; }

# check_store: "<outcome> <version>|<integrity_check>|<rows>" of the store at this instant.
# match reads without writing; sqlite3 then opens it as an app would (WAL replayed).
check_store() {
  local m check rows
  m=$(bench_match "$store")
  check=$(sqlite3 "$store" "PRAGMA integrity_check" 2>&1 | head -3 | paste -sd' ' -)
  rows=$(sqlite3 "$store" "SELECT count(*) FROM ZENTRY" 2>&1 | head -1)
  echo "$m|$check|$rows"
}

keep_failure() {  # keep_failure RUN REASON: keeps the run's folder and says why
  local kept="$work/failed-$1"
  rm -rf "$kept"; mv "$run_dir" "$kept"
  printf '%s\n' "$2" >"$kept/REASON.txt"
  echo "  run $1: FAILED: $2 (kept in $kept)" >&2
}

# --- typical run time ------------------------------------------------------------------------
rm -rf "$work"/failed-*
fresh_copy
start=$(date +%s.%N)
"$BIN" upgrade "$store" --catalog "$CATALOG" --backup-dir "$backups" --json >"$work/uncut.json"
typical=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
# late_start REPORT T: P for an uncut run's JSON report and wall time.
late_start() {
  python3 - "$1" "$2" <<'PY'
import json, sys
phases = {p["name"]: p["seconds"] for p in json.load(open(sys.argv[1]))["phases"]}
end = phases.get("verify", 0) + phases.get("publish", 0)
print(f"{max(0.0, float(sys.argv[2]) - 2 * end - 1):.2f}")
PY
}
late=$(late_start "$work/uncut.json" "$typical")
uncut=$(check_store)
[ "$uncut" = "exact V4|ok|$EXPECTED_ROWS" ] || { echo "an uncut upgrade does not give exact V4 with every row: $uncut" >&2; exit 1; }
echo "store: $pristine_rows rows, $((pristine_bytes / 1000000)) MB, + 200–1,200 rows in the -wal ($WAL_BYTES bytes this time);" \
     "an uncut upgrade takes $typical s; $RUNS runs, kill -9 after a random delay in [0, $typical] s (odd runs) or [$late, $typical] s (even runs), T following each uncut second run" | tee "$results"

# --- the runs --------------------------------------------------------------------------------
original=0; upgraded=0; finished=0; failures=0; broken=0; second_upgraded=0; second_current=0
swept_store=0; swept_backups=0; started_at=$(date +%s)
for run in $(seq 1 "$RUNS"); do
  fresh_copy
  from=0; [ $((run % 2)) -eq 0 ] && from=$late
  typical_used=$typical
  delay=$(awk -v a="$from" -v t="$typical" -v r="$RANDOM" 'BEGIN { printf "%.3f", a + (t - a) * r / 32767 }')
  "$BIN" upgrade "$store" --catalog "$CATALOG" --backup-dir "$backups" --json >"$run_dir/first.json" 2>"$run_dir/first.stderr" &
  pid=$!
  sleep "$delay"
  if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid" 2>/dev/null || true; fi
  first_status=0; wait "$pid" 2>/dev/null || first_status=$?  # (no "Killed" line from the shell)
  echo "delay $delay s, exit status $first_status, -wal $WAL_BYTES bytes, expected rows $EXPECTED_ROWS" >"$run_dir/first.txt"
  ls -la "$run_dir/store" "$backups" >>"$run_dir/first.txt" 2>&1 || true

  state=$(check_store)
  case $state in
    "exact V1|ok|$EXPECTED_ROWS") what=original; original=$((original + 1)) ;;
    "exact V4|ok|$EXPECTED_ROWS") what=upgraded; upgraded=$((upgraded + 1)) ;;
    *)
      failures=$((failures + 1)); broken=$((broken + 1))
      keep_failure "$run" "after kill -9 at $delay s (exit $first_status) the store is broken: match|integrity|rows = $state (expected rows $EXPECTED_ROWS)"
      [ "$KEEP_GOING" = 1 ] && continue
      break ;;
  esac
  case $first_status in
    137) ;;
    0)
      if [ "$what" = upgraded ]; then
        finished=$((finished + 1))
        # It finished before the kill: its own time (the report's, plus start-up) is the next T.
        typical=$(python3 -c 'import json, sys; print("%.2f" % (json.load(open(sys.argv[1]))["seconds"] + 0.2))' "$run_dir/first.json")
        late=$(late_start "$run_dir/first.json" "$typical")
      else
        first_status="0 but the store is $what"
      fi ;;
  esac
  case $first_status in
    137|0) ;;
    *)
      failures=$((failures + 1))
      keep_failure "$run" "the first run, not yet killed at $delay s, exited $first_status ($what): $(head -c 400 "$run_dir/first.stderr")"
      continue ;;
  esac

  # Backdate what the killed run left, then run again: it must finish the job and sweep them.
  left_store=$(leftovers "$run_dir/store"); left_backups=$(leftovers "$backups")
  [ -n "$left_store" ] && swept_store=$((swept_store + $(echo "$left_store" | wc -l)))
  [ -n "$left_backups" ] && swept_backups=$((swept_backups + $(echo "$left_backups" | wc -l)))
  find "$run_dir/store" "$backups" -maxdepth 1 -name '*.storerescue-tmp-*' -exec touch -h -d '2 hours ago' {} + 2>/dev/null || true
  second_status=0; start=$(date +%s.%N)
  "$BIN" upgrade "$store" --catalog "$CATALOG" --backup-dir "$backups" --json >"$run_dir/second.json" 2>"$run_dir/second.stderr" || second_status=$?
  if [ "$second_status" = 0 ]; then  # an uncut upgrade: the next runs' T
    typical=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.2f", e - s }')
    late=$(late_start "$run_dir/second.json" "$typical")
  fi
  final=$(check_store)
  remaining=$(leftovers "$run_dir/store")
  problem=""
  case $second_status in
    0) second_upgraded=$((second_upgraded + 1)) ;;
    2) second_current=$((second_current + 1)) ;;
    *) problem="the second upgrade exited $second_status: $(head -c 400 "$run_dir/second.stderr")" ;;
  esac
  [ "$final" = "exact V4|ok|$EXPECTED_ROWS" ] || problem+="${problem:+; }after the second upgrade: match|integrity|rows = $final (expected exact V4|ok|$EXPECTED_ROWS)"
  [ -z "$remaining" ] || problem+="${problem:+; }left beside the store after the second run: $(echo "$remaining" | paste -sd' ' -) (the killed run left: $(echo "$left_store" | paste -sd' ' -))"
  if [ -n "$problem" ]; then
    failures=$((failures + 1))
    keep_failure "$run" "killed at $delay s (first run exit $first_status, store $what): $problem"
    continue
  fi
  printf '  run %3d: kill at %6.2f s of %5.2f -> %-8s (exit %3s); left %d beside the store, %d in the backups; second run exit %s\n' \
    "$run" "$delay" "$typical_used" "$what" "$first_status" "$(echo -n "$left_store" | grep -c . || true)" \
    "$(echo -n "$left_backups" | grep -c . || true)" "$second_status" >&2
done
rm -rf "$run_dir"
done_runs=$((original + upgraded + broken))
elapsed=$(( $(date +%s) - started_at ))

{
echo "crash-upgrade: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores; binary built from $BUILT_FROM;" \
     "$((elapsed / 60)) min $((elapsed % 60)) s; 1-minute load at the end $(bench_load)"
echo
printf "%-58s %6s\n" "runs" "$done_runs"
printf "%-58s %6s\n" "  killed before the publish: the original V1, every row" "$original"
printf "%-58s %6s\n" "  killed after the publish: V4, every row" "$((upgraded - finished))"
printf "%-58s %6s\n" "  finished before the kill (V4, every row)" "$finished"
printf "%-58s %6s\n" "store broken after kill -9 (critical)" "$broken"
printf "%-58s %6s\n" "second run: upgraded (exit 0) / already current (exit 2)" "$second_upgraded / $second_current"
printf "%-58s %6s\n" "temporaries left by killed runs: beside the store / backups" "$swept_store / $swept_backups"
printf "%-58s %6s\n" "failures" "$failures"
} | tee -a "$results"
[ "$failures" -eq 0 ] && [ "$done_runs" -eq "$RUNS" ] || exit 1
