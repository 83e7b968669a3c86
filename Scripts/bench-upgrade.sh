#!/usr/bin/env bash
# Benchmark of `storerescue upgrade` end to end, in place, on the migrate benchmark's store.
#
# The store and catalog are Scripts/bench-migrate.sh's (Scripts/bench-lib.sh: 4,000,000 rows of
# `Entry` at V1, a 4-version plan to V4), made or reused in BENCH_STORE_DIR. Each round copies
# the pristine V1 store into WORKDIR/store/ (not timed), then times, on that copy:
#   storerescue backup  STORE --to DIR                                    (the backup alone)
#   storerescue upgrade STORE --catalog C --backup-dir DIR --json          (read, verified backup,
#                                                migrate, verify, atomic replacement in place)
# and then, in the same round, the hand-written SQL (bench-migrate.sh's fused rebuild,
# bench_measure_hand_sql in bench-lib.sh) on another fresh copy (the copy not timed with it).
# After the last round it checks that the store is exactly V4 (`match --json`) with every row.
#
# Target: upgrade ≤ backup + 1.2 × the hand-written SQL's wall time, each the median of the
# same rounds; peak RSS ≤ 64 MB. The hand SQL is measured here, interleaved with the upgrade,
# rather than read from bench-migrate.sh's last run: its runs spread by ±13% from one run of
# the script to the next, and a figure from another hour moved the ratio with the machine.
# Medians of BENCH_RUNS rounds (default 3), each after waiting for a quiet machine
# (bench-lib.sh). Exit 0 when both targets are met and the upgraded store checks out, 1
# otherwise. Also writes WORKDIR/results.txt.
#
#   Scripts/bench-upgrade.sh [WORKDIR]     (default WORKDIR: bench-work/upgrade, gitignored)
#   Environment: BENCH_ROWS (4000000), BENCH_RUNS (3), BENCH_STORE_DIR (bench-work/migrate),
#   BENCH_BIN, BENCH_LOAD_MAX (1.5), BENCH_LOAD_WAIT_MAX (10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/bench-lib.sh
work="${1:-bench-work/upgrade}"
ROWS=${BENCH_ROWS:-4000000}
RUNS=${BENCH_RUNS:-3}
store_dir="${BENCH_STORE_DIR:-bench-work/migrate}"
mkdir -p "$work" "$store_dir"
work=$(cd "$work" && pwd)
store_dir=$(cd "$store_dir" && pwd)
results="$work/results.txt"

bench_tools sqlite3 time python3 libsqlite3-dev
bench_binary "$work"
bench_catalog "$store_dir"
pristine="$store_dir/v1-$ROWS.sqlite"
bench_make_store "$pristine" "$ROWS"
bench_hand_sql "$work"
rows_in=$(sqlite3 "$pristine" "SELECT count(*) FROM ZENTRY")
bytes_in=$(stat -c %s "$pristine")

store="$work/store/Ledger.sqlite"
backups="$work/backups"
fresh_store() { rm -rf "$work/store" "$backups"; mkdir -p "$work/store"; cp "$pristine" "$store"; sync; }

WALL_upgrade=(); RSS_upgrade=(); WALL_backup=(); RSS_backup=(); WALL_hand=(); RSS_hand=(); WALL_copy=(); RSS_copy=(); loads=()
for round in $(seq 1 "$RUNS"); do
  fresh_store
  bench_wait_for_quiet
  loads+=("$LOAD_SEEN")
  cat "$store" >/dev/null
  bench_measure backup "$BIN" backup "$store" --to "$backups/plain"
  BENCH_STDOUT="$work/upgrade-$round.json" bench_measure upgrade \
    "$BIN" upgrade "$store" --catalog "$CATALOG" --backup-dir "$backups/pre-upgrade" --json
  bench_measure_hand_sql "$pristine" "$work/hand.sqlite"
  rm -f "$work/hand.sqlite"*
  echo "  round $round (load $LOAD_SEEN): backup ${WALL_backup[-1]} s, upgrade ${WALL_upgrade[-1]} s (${RSS_upgrade[-1]} KB)," \
       "hand SQL ${WALL_hand[-1]} s" >&2
done
load_after=$(bench_load)

# --- checks on the store the last round upgraded ----------------------------------------------
after_match=$(bench_match "$store")
after_rows=$(sqlite3 "$store" "SELECT count(*) FROM ZENTRY")
after_check=$(sqlite3 "$store" "PRAGMA quick_check" | head -3 | paste -sd' ' -)
sidecars=$(cd "$work/store" && ls -A | grep -v '^Ledger.sqlite$' | paste -sd' ' - || true)
phases=$(python3 - "$work/upgrade-$RUNS.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
phases = r.get("phases") or []
print(f"status {r.get('status')}; " + ", ".join(f"{p.get('phase', p.get('name'))} {p.get('seconds', 0):.2f} s" for p in phases))
PY
)

# --- report ----------------------------------------------------------------------------------
UP=$(bench_median "${WALL_upgrade[@]}"); BK=$(bench_median "${WALL_backup[@]}"); HANDT=$(bench_median "${WALL_hand[@]}")
UP_RSS=$(bench_max "${RSS_upgrade[@]}"); BK_RSS=$(bench_max "${RSS_backup[@]}"); HAND_RSS=$(bench_max "${RSS_hand[@]}")
budget=$(awk -v b="$BK" -v h="$HANDT" 'BEGIN { printf "%.2f", b + 1.2 * h }')
time_ratio=$(bench_ratio "$UP" "$budget")
time_met=$(awk -v u="$UP" -v b="$budget" 'BEGIN { print (u <= b) ? "MET" : "NOT MET" }')
rss_met=$(awk -v k="$UP_RSS" 'BEGIN { print (k <= 64 * 1024) ? "MET" : "NOT MET" }')
store_ok=$([ "$after_match" = "exact V4" ] && [ "$after_rows" = "$rows_in" ] && [ "$after_check" = ok ] && echo yes || echo NO)
{
echo "bench-upgrade: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo) RAM;" \
     "SQLite $(sqlite3 --version | cut -d' ' -f1); binary built from $BUILT_FROM"
echo "store: $(printf "%'d" "$rows_in") rows, $((bytes_in / 1000000)) MB (V1, WAL mode, checkpointed), a fresh copy each round, page cache warm"
echo "1-minute load before each round: ${loads[*]}; after the last: $load_after"
echo
printf "%-44s %10s %14s %18s\n" "V1 -> V4 in place, median of $RUNS" "wall (s)" "peak RSS (MB)" "runs (s)"
printf "%-44s %10s %14s %18s\n" "storerescue upgrade --json" "$UP" "$(bench_mb "$UP_RSS")" "${WALL_upgrade[*]}"
printf "%-44s %10s %14s %18s\n" "storerescue backup" "$BK" "$(bench_mb "$BK_RSS")" "${WALL_backup[*]}"
printf "%-44s %10s %14s %18s\n" "sqlite3 fused rebuild (hand SQL)" "$HANDT" "$(bench_mb "$HAND_RSS")" "${WALL_hand[*]}"
printf "%-44s %10s\n" "budget: backup + 1.2 x hand SQL" "$budget"
echo
echo "hand SQL time from: these rounds, each after its upgrade (a fresh copy, not timed: ${WALL_copy[*]} s)"
echo "time:   upgrade / budget = ${time_ratio}x   (target <= 1.00x: $time_met)"
echo "memory: upgrade peak RSS = $(bench_mb "$UP_RSS") MB (target <= 64 MB: $rss_met)"
echo "checks: after the upgrade: match '$after_match', $after_rows rows (before: $rows_in), quick_check '$after_check';" \
     "beside the store: ${sidecars:-nothing}: $store_ok"
echo "        last run's phases: $phases"
} | tee "$results"

status=0
[ "$time_met" = MET ] || status=1
[ "$rss_met" = MET ] || status=1
[ "$store_ok" = yes ] || { echo "FAILED: the upgraded store is not exact V4 with every row" | tee -a "$results"; status=1; }
rm -rf "$work/store" "$backups"
echo "results written to $results"
exit "$status"
