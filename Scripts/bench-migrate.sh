#!/usr/bin/env bash
# Benchmark of `storerescue migrate` V1 → V4 against the same change written by hand in sqlite3.
#
# The catalog and the store come from Scripts/bench-lib.sh: one entity `Entry`; V2 adds the
# required `summary` filled by a custom stage's `map`, V3 removes `legacyCode` and renames
# `author`, V4 adds a fetch index. The store (BENCH_ROWS rows, default 4,000,000) is made with
# `storerescue create --version V1` and one INSERT … SELECT, in WAL mode and checkpointed, and
# cached in WORKDIR. The hand-written baseline is one sqlite3 run on a copy of that store, one
# transaction: CREATE TABLE with V4's exact text, INSERT … SELECT (summary computed with the same
# expression, legacyCode dropped, author renamed), DROP TABLE, ALTER TABLE … RENAME, V4's indexes,
# Z_PRIMARYKEY and Z_METADATA. The copy is not part of the baseline (migrate reads the original
# and writes a new file); its time is shown apart.
#
# BENCH_RUNS rounds (default 3), each running both once, interleaved, after waiting for a quiet
# machine (1-minute load ≤ 1.5, see bench-lib.sh); the table shows medians, and every round.
# Peak RSS is GNU time's maximum resident set size: the largest of the timed runs, and one run
# on a BENCH_SMALL_ROWS store (default 500,000) to show it does not grow with the row count.
# Then: both outputs hold the same rows and values (digest of every V4 column), `match` says
# exact V4 for both, progress shows on a terminal (script(1)) and nothing goes to a pipe.
# BENCH_PROFILE=1 (default) adds where migrate's time goes: every SQL statement it runs, timed
# by SQLite through an LD_PRELOAD shim (Scripts/sqlite-profile.c).
#
# Targets: migrate ≤ 1.15× the hand-written SQL's median wall time; peak RSS ≤ 64 MB whatever the
# row count. Exit 0 when both are met and the outputs agree, 1 otherwise.
# Also writes WORKDIR/results.txt and WORKDIR/figures.env (this run's figures, for the record;
# Scripts/bench-upgrade.sh measures the hand SQL in its own rounds).
#
#   Scripts/bench-migrate.sh [WORKDIR]     (default WORKDIR: bench-work/migrate, gitignored)
#   Environment: BENCH_ROWS, BENCH_SMALL_ROWS, BENCH_RUNS, BENCH_PROFILE, BENCH_BIN (a binary to
#   time instead of building one), BENCH_LOAD_MAX (1.5), BENCH_LOAD_WAIT_MAX (10 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
source Scripts/bench-lib.sh
work="${1:-bench-work/migrate}"
ROWS=${BENCH_ROWS:-4000000}
SMALL_ROWS=${BENCH_SMALL_ROWS:-500000}
RUNS=${BENCH_RUNS:-3}
PROFILE=${BENCH_PROFILE:-1}
mkdir -p "$work"
work=$(cd "$work" && pwd)
results="$work/results.txt"

bench_tools sqlite3 time script python3 libsqlite3-dev $([ "$PROFILE" = 1 ] && echo gcc)
bench_binary "$work"
bench_catalog "$work"
store="$work/v1-$ROWS.sqlite"
small="$work/v1-$SMALL_ROWS.sqlite"
bench_make_store "$store" "$ROWS"
bench_make_store "$small" "$SMALL_ROWS"
bench_hand_sql "$work"

rows_in=$(sqlite3 "$store" "SELECT count(*) FROM ZENTRY")
bytes_in=$(stat -c %s "$store")
"$BIN" migrate "$store" --catalog "$CATALOG" --dry-run >"$work/dry-run.txt" || { cat "$work/dry-run.txt"; exit 1; }
grep -q 'the migration can run' "$work/dry-run.txt" || { cat "$work/dry-run.txt"; exit 1; }

out="$work/out-migrate.sqlite"
copy="$work/out-hand.sqlite"
clean_out() { rm -rf "$out" "$out-wal" "$out-shm" "$work"/.*storerescue-tmp-*; }
clean_copy() { rm -f "$copy" "$copy-wal" "$copy-shm" "$copy-journal"; }

# --- timing ----------------------------------------------------------------------------------
WALL_migrate=(); RSS_migrate=(); WALL_hand=(); RSS_hand=(); WALL_copy=(); RSS_copy=(); loads=()
for round in $(seq 1 "$RUNS"); do
  bench_wait_for_quiet
  loads+=("$LOAD_SEEN")
  cat "$store" >/dev/null  # warm page cache, for both alike
  clean_out; sync
  bench_measure migrate "$BIN" migrate "$store" --catalog "$CATALOG" --out "$out"
  bench_measure_hand_sql "$store" "$copy"
  echo "  round $round (load $LOAD_SEEN): migrate ${WALL_migrate[-1]} s, ${RSS_migrate[-1]} KB;" \
       "sqlite3 ${WALL_hand[-1]} s, ${RSS_hand[-1]} KB; cp ${WALL_copy[-1]} s" >&2
done
load_after=$(bench_load)
MIG=$(bench_median "${WALL_migrate[@]}"); HANDT=$(bench_median "${WALL_hand[@]}"); COPYT=$(bench_median "${WALL_copy[@]}")
MIG_RSS=$(bench_max "${RSS_migrate[@]}"); HAND_RSS=$(bench_max "${RSS_hand[@]}"); COPY_RSS=$(bench_max "${RSS_copy[@]}")

# --- peak memory on a store 8× smaller ---------------------------------------------------------
small_out="$work/out-small.sqlite"
rm -rf "$small_out" "$small_out"-*
WALL_small=(); RSS_small=()
bench_measure small "$BIN" migrate "$small" --catalog "$CATALOG" --out "$small_out"
rm -rf "$small_out" "$small_out"-*

# --- checks: the outputs of the last round ----------------------------------------------------
digest() {
  sqlite3 -batch -noheader "$1" "SELECT $(echo "$V4_COLUMNS" | sed -E 's/([A-Z_]+)/quote(\1)/g') FROM ZENTRY ORDER BY Z_PK" | sha256sum | cut -c1-16
}
ours_digest=$(digest "$out"); hand_digest=$(digest "$copy")
ours_rows=$(sqlite3 "$out" "SELECT count(*) FROM ZENTRY"); hand_rows=$(sqlite3 "$copy" "SELECT count(*) FROM ZENTRY")
index_sql="SELECT group_concat(sql, '; ') FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
ours_indexes=$(sqlite3 "$out" "$index_sql"); hand_indexes=$(sqlite3 "$copy" "$index_sql")
ours_match=$(bench_match "$out"); hand_match=$(bench_match "$copy")
intermediates=$("$BIN" migrate "$small" --catalog "$CATALOG" --out "$small_out" --json \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["result"]["intermediateVersions"])' 2>/dev/null || echo "?")
rm -rf "$small_out" "$small_out"-*

# --- progress on a terminal (script(1): stderr is a tty, stdout a file), nothing on a pipe -----
script -q -e -O "$work/tty-stderr.log" -c "'$BIN' migrate '$small' --catalog '$CATALOG' --out '$small_out' >/dev/null" >/dev/null || true
tty_updates=$(grep -v '^Script ' "$work/tty-stderr.log" | tr '\r' '\n' | sed 's/\x1b\[K//g' | grep -c '[a-z]' || true)
tty_last=$(grep -v '^Script ' "$work/tty-stderr.log" | tr '\r' '\n' | sed 's/\x1b\[K//g' | grep '[a-z]' | tail -1 || true)
rm -rf "$small_out" "$small_out"-*
pipe_bytes=$("$BIN" migrate "$small" --catalog "$CATALOG" --out "$small_out" 2>&1 >/dev/null | wc -c)
rm -rf "$small_out" "$small_out"-*

# --- report ----------------------------------------------------------------------------------
time_ratio=$(bench_ratio "$MIG" "$HANDT")
time_met=$(awk -v r="$time_ratio" 'BEGIN { print (r <= 1.15) ? "MET" : "NOT MET" }')
rss_worst=$(bench_max "$MIG_RSS" "${RSS_small[0]}")
rss_met=$(awk -v k="$rss_worst" 'BEGIN { print (k <= 64 * 1024) ? "MET" : "NOT MET" }')
same=$([ "$ours_digest" = "$hand_digest" ] && [ "$ours_rows" = "$hand_rows" ] && [ "$ours_indexes" = "$hand_indexes" ] && echo yes || echo NO)
{
echo "bench-migrate: $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo) RAM;" \
     "SQLite $(sqlite3 --version | cut -d' ' -f1); binary built from $BUILT_FROM"
echo "store: $rows_in rows, $((bytes_in / 1000000)) MB (V1, WAL mode, checkpointed), page cache warm"
echo "1-minute load before each round: ${loads[*]}; after the last: $load_after"
echo
printf "%-34s %9s %8s %14s   %s\n" "V1 -> V4, median of $RUNS" "wall (s)" "vs SQL" "peak RSS (MB)" "each run (s)"
printf "%-34s %9s %7sx %14s   %s\n" "storerescue migrate" "$MIG" "$time_ratio" "$(bench_mb "$MIG_RSS")" "${WALL_migrate[*]}"
printf "%-34s %9s %7sx %14s   %s\n" "sqlite3 fused rebuild (hand SQL)" "$HANDT" "1.00" "$(bench_mb "$HAND_RSS")" "${WALL_hand[*]}"
printf "%-34s %9s %8s %14s   %s\n" "  (cp of the store, not counted)" "$COPYT" "" "$(bench_mb "$COPY_RSS")" "${WALL_copy[*]}"
printf "%-34s %9s %8s %14s\n" "storerescue migrate, $SMALL_ROWS rows" "${WALL_small[0]}" "" "$(bench_mb "${RSS_small[0]}")"
echo
echo "time:   migrate / hand SQL = ${time_ratio}x   (target <= 1.15x: $time_met)"
echo "memory: migrate peak RSS   = $(bench_mb "$rss_worst") MB (target <= 64 MB: $rss_met)"
echo "checks: same rows and values as the hand SQL: $same (digest $ours_digest / $hand_digest, rows $ours_rows / $hand_rows);" \
     "match: migrate '$ours_match', hand SQL '$hand_match'; intermediate versions written: $intermediates"
echo "        progress on a terminal: $tty_updates updates (last: ${tty_last:-none}); stderr to a pipe: $pipe_bytes bytes"
} | tee "$results"
cat >"$work/figures.env" <<ENV
MIGRATE_ROWS=$rows_in
MIGRATE_WALL=$MIG
HAND_SQL_WALL=$HANDT
HAND_SQL_RUNS="${WALL_hand[*]}"
MIGRATE_MEASURED="$(date -u '+%Y-%m-%d %H:%M UTC')"
ENV

status=0
[ "$time_met" = MET ] || status=1
[ "$rss_met" = MET ] || status=1
[ "$same" = yes ] && [ "$ours_match" = "exact V4" ] || { echo "FAILED: the outputs differ or migrate's is not exact V4" | tee -a "$results"; status=1; }

# --- where migrate's time goes ---------------------------------------------------------------
if [ "$PROFILE" = 1 ]; then
  shim="$work/sqlite-profile.so"
  cc -O2 -shared -fPIC -o "$shim" Scripts/sqlite-profile.c -ldl -lsqlite3
  profile_run() {  # profile_run NAME COMMAND…: one run with every statement timed
    rm -f "$work/profile-$1.tsv"
    local start end
    start=$(date +%s.%N)
    SQLITE_PROFILE_OUT="$work/profile-$1.tsv" LD_PRELOAD="$shim" "${@:2}" >/dev/null
    end=$(date +%s.%N)
    echo "$start $end" >"$work/profile-$1.wall"
  }
  bench_wait_for_quiet
  clean_out; sync
  profile_run migrate "$BIN" migrate "$store" --catalog "$CATALOG" --out "$out"
  clean_copy; cp "$store" "$copy"; sync
  profile_run hand sqlite3 "$copy" ".read $HAND"
  {
  echo
  echo "where the time goes (one profiled run each, load $LOAD_SEEN; statements timed by SQLite, SQLITE_TRACE_PROFILE):"
  python3 - "$work" <<'PY'
import collections, os, sys
work = sys.argv[1]
def kind(sql):
    u = " ".join(sql.split()).upper()
    if u.startswith("INSERT INTO") and " SELECT " in u: return "INSERT ... SELECT (table rebuild)"
    if u.startswith("CREATE INDEX") or u.startswith("CREATE UNIQUE INDEX"): return "CREATE INDEX"
    if "QUICK_CHECK" in u or "INTEGRITY_CHECK" in u: return "PRAGMA quick_check / integrity_check"
    if "WAL_CHECKPOINT" in u or "JOURNAL_MODE" in u: return "journal mode / checkpoint"
    if "FILTER (WHERE" in u: return "analysis scan (count FILTER)"
    if u.startswith("SELECT"): return "other SELECTs (counts, links, match)"
    if u.startswith("COMMIT") or u.startswith("END"): return "COMMIT"
    return "other statements"
for name, title in (("migrate", "storerescue migrate"), ("hand", "sqlite3 fused rebuild")):
    rows = []
    for line in open(os.path.join(work, f"profile-{name}.tsv"), encoding="utf-8", errors="replace"):
        parts = line.rstrip("\n").split("\t", 3)
        if len(parts) == 4: rows.append((float(parts[0]), float(parts[1]) / 1000, parts[2], parts[3]))
    start, end = map(float, open(os.path.join(work, f"profile-{name}.wall")).read().split())
    inside = sum(r[1] for r in rows)
    print(f"  {title}: wall {end - start:.2f} s; {len(rows)} statements, {inside:.2f} s inside SQLite, {end - start - inside:.2f} s outside")
    by = collections.defaultdict(lambda: [0.0, 0])
    for _, s, _, sql in rows:
        by[kind(sql)][0] += s; by[kind(sql)][1] += 1
    for k, (s, n) in sorted(by.items(), key=lambda kv: -kv[1][0]):
        if s >= 0.05: print(f"    {s:7.2f} s {n:5d}x  {k}")
    for end_at, s, db, sql in sorted(rows, key=lambda r: -r[1])[:4]:
        text = " ".join(sql.split())
        print(f"    slowest: {s:6.2f} s at {end_at:6.2f} s [{db}] {text[:110]}{'…' if len(text) > 110 else ''}")
PY
  } | tee -a "$results"
fi
clean_out; clean_copy
echo "results written to $results"
exit "$status"
