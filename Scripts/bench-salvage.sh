#!/usr/bin/env bash
# Benchmark of `storerescue salvage` (Docs/SALVAGE.md#benchmark), from one run:
#   recovery: a real-layout store (made by `storerescue create` from salvage-bench-catalog.json,
#     filled by salvage-bench.py) damaged three ways — 10 zeroed pages in the middle, 200 random
#     bytes replaced, the file cut to 2/3 — salvaged in Core Data and plain mode, scored against
#     the truth computed from page bytes (every row whose cell lies on an intact page), beside the
#     anchors: plain SELECT, rowid-range probing split around errors, sqlite3 .recover;
#   time: salvage against PRAGMA quick_check on the undamaged file (median of rounds), and the
#     floors — SQLite copying the same rows into the same layout itself (INSERT … SELECT), the
#     same checked (quick_check) and flushed (fsync) as salvage does before publishing, SQLite's
#     fastest copy of a healthy store (VACUUM INTO: records and index entries moved as they are,
#     unchecked, flushed), and a plain byte copy of the store flushed to disk (what any command
#     writing that much pays);
#   memory: peak RSS (GNU time) on the store and on one 10x larger;
#   sweeps: a small store truncated at every page boundary, each page zeroed in turn, every byte
#     of page 1 inverted, 100 seeds of 50 random bytes: exit 0/65 only, input unchanged, every
#     row on an intact page found.
#
# Targets (issue 9); the script ends with one line per target, MET or MISSED, and exits 1 when
# any is missed:
#   - every salvage (both modes, three damages) recovers every row of the truth, and sweeps find
#     every row on an intact page, with exit 0/65 only and the input unchanged;
#   - salvage's wall time <= 2x PRAGMA quick_check on the undamaged file (medians);
#   - salvage's peak RSS <= 64 MB, on the store and on the larger one.
#
# Environment: BENCH_WORK (default bench-work/, gitignored), BENCH_ROWS (default 200000, at
# least 20000), BENCH_LARGE_ROWS (default 2000000; 0 skips), BENCH_ROUNDS (default 3),
# BENCH_SWEEPS (1; 0 skips), BENCH_BUILD_PATH (default .build-bench-release).
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${BENCH_WORK:-bench-work}/salvage
ROWS=${BENCH_ROWS:-200000}
LARGE_ROWS=${BENCH_LARGE_ROWS:-2000000}
ROUNDS=${BENCH_ROUNDS:-3}
SWEEPS=${BENCH_SWEEPS:-1}
BUILD_PATH=${BENCH_BUILD_PATH:-.build-bench-release}
[ "$ROWS" -ge 20000 ] || { echo "BENCH_ROWS must be at least 20000 (issue 9's target store)" >&2; exit 64; }
HELPER=Scripts/salvage-bench.py
CATALOG=Scripts/salvage-bench-catalog.json

# --- tools ---------------------------------------------------------------------------------
source Scripts/bench-lib.sh
bench_tools time sqlite3 python3 libsqlite3-dev zlib1g-dev


echo "building storerescue (release) ..."
swift build -c release --build-path "$BUILD_PATH" --product storerescue >/dev/null
BIN=$(swift build -c release --build-path "$BUILD_PATH" --show-bin-path)/storerescue
mkdir -p "$WORK"

# make_store PATH ROWS: a real-layout store (cached between runs).
make_store() {
  if [ ! -f "$1" ] || [ "$(cat "$1.rows" 2>/dev/null)" != "$2" ]; then
    rm -f "$1" "$1-wal" "$1-shm"
    "$BIN" create --catalog "$CATALOG" --version V1 "$1" >/dev/null
    python3 "$HELPER" fill "$1" "$2"
    echo "$2" >"$1.rows"
  fi
}
# Targets: target NAME MET|MISSED DETAIL, printed together at the end.
TARGETS=()
MISSED=0
target() {
  TARGETS+=("$(printf '%-7s %-58s %s' "$2" "$1" "$3")")
  [ "$2" = MET ] || MISSED=1
}
# measure NAME COMMAND...: wall time and peak RSS (KB, GNU time's %M: the kernel's ru_maxrss)
# appended to WALL_<NAME>, RSS_<NAME>. A command that fails is a missed target, not a figure.
measure() {
  local name=$1; shift
  local status=0
  /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" >/dev/null 2>"$WORK/stderr.txt" || status=$?
  if [ "$status" != 0 ]; then
    echo "  $name: $* exited $status: $(head -c 300 "$WORK/stderr.txt")"
    target "$name runs" MISSED "exit $status"
  fi
  local wall rss
  read -r wall rss < <(tail -1 "$WORK/time.txt")
  eval "WALL_$name+=($wall); RSS_$name+=($rss)"
}
# complete LABEL SCORE: the salvage recovered every truth row.
complete() {
  local recovered truth
  recovered=$(field "$2" recovered); truth=$(field "$2" truth)
  if [ "$recovered" = "$truth" ] && [ "$truth" -gt 0 ]; then target "$1" MET "$recovered/$truth"; else target "$1" MISSED "$recovered/$truth"; fi
}
at_most() { awk "BEGIN { exit !($1 <= $2) }"; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
max_mb() { printf '%s\n' "$@" | sort -n | tail -1 | awk '{ printf "%.1f", $1 / 1024 }'; }
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
pct() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); t=d['truth']; print(f\"{d['recovered']}/{t} ({100*d['recovered']/t:.1f}%)\" if t else 'n/a')" "$1"; }
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], ''))" "$1" "$2"; }

STORE="$WORK/bench.sqlite"
make_store "$STORE" "$ROWS"
echo "store: $STORE, $(stat -c %s "$STORE") bytes, $(sqlite3 "$STORE" 'PRAGMA page_count') pages; $(nproc) cores; sqlite3 $(sqlite3 --version | cut -d' ' -f1)"

# --- recovery --------------------------------------------------------------------------------
echo
printf "%-10s %-24s %-24s %-22s %-22s %-22s %s\n" damage "salvage --catalog" "salvage (plain)" "SELECT" "rowid probing" "sqlite3 .recover" "partial rows (cell intact, overflow not)"
for kind in zero10 flip200 truncate; do
  D="$WORK/d-$kind.sqlite"
  python3 "$HELPER" damage "$STORE" "$D" "$kind" 1
  rm -f "$WORK/s-$kind.sqlite" "$WORK/p-$kind.sqlite" "$WORK"/a-*.sqlite
  "$BIN" salvage "$D" --out "$WORK/s-$kind.sqlite" --catalog "$CATALOG" --json >"$WORK/s-$kind.json"
  "$BIN" salvage "$D" --out "$WORK/p-$kind.sqlite" --json >"$WORK/p-$kind.json"
  CD=$(python3 "$HELPER" score "$STORE" "$D" "$WORK/s-$kind.sqlite" --core-data)
  PL=$(python3 "$HELPER" score "$STORE" "$D" "$WORK/p-$kind.sqlite")
  python3 "$HELPER" anchor-select "$D" "$WORK/a-select.sqlite" >"$WORK/a-select.json"
  SE=$(python3 "$HELPER" score "$STORE" "$D" "$WORK/a-select.sqlite")
  python3 "$HELPER" anchor-probe "$D" "$WORK/a-probe.sqlite" >"$WORK/a-probe.json"
  PR=$(python3 "$HELPER" score "$STORE" "$D" "$WORK/a-probe.sqlite")
  RECOVER=$(python3 "$HELPER" anchor-recover "$D" "$WORK/a-recover.sqlite")
  if [ "$(field "$RECOVER" available)" = "True" ]; then RE=$(pct "$(python3 "$HELPER" score "$STORE" "$D" "$WORK/a-recover.sqlite")"); else RE="fails ($(field "$RECOVER" error))"; fi
  SELECT_NOTE=$(python3 -c "import json; d=json.load(open('$WORK/a-select.json')); print('' if not d.get('opened') else ('' if not d['failedTables'] else ' (errors)'))")
  printf "%-10s %-24s %-24s %-22s %-22s %-22s %s\n" "$kind" "$(pct "$CD")" "$(pct "$PL")" "$(pct "$SE")$SELECT_NOTE" "$(pct "$PR")" "$RE" \
    "$(field "$PL" partialRecovered)/$(field "$PL" partialTruth) found; other rows $(field "$PL" otherRows), altered $(field "$PL" altered)"
  echo "  core data: $CD"
  complete "recovery, salvage --catalog, $kind: every truth row" "$CD"
  complete "recovery, salvage (plain), $kind: every truth row" "$PL"
done

# --- time ------------------------------------------------------------------------------------
echo
FLOOR="$WORK/floor.sqlite"
WALL_qc=(); RSS_qc=(); WALL_cd=(); RSS_cd=(); WALL_pl=(); RSS_pl=(); WALL_floor=(); RSS_floor=(); WALL_z=(); RSS_z=()
WALL_dd=(); RSS_dd=(); WALL_safe=(); RSS_safe=(); WALL_vac=(); RSS_vac=()
for round in $(seq 1 "$ROUNDS"); do
  cat "$STORE" >/dev/null
  measure qc sqlite3 "$STORE" "PRAGMA quick_check"
  rm -f "$WORK/t-cd.sqlite" "$WORK/t-pl.sqlite" "$WORK/t-z.sqlite" "$FLOOR"
  measure cd "$BIN" salvage "$STORE" --out "$WORK/t-cd.sqlite" --catalog "$CATALOG"
  measure pl "$BIN" salvage "$STORE" --out "$WORK/t-pl.sqlite"
  measure z "$BIN" salvage "$WORK/d-zero10.sqlite" --out "$WORK/t-z.sqlite" --catalog "$CATALOG"
  "$BIN" create --catalog "$CATALOG" --version V1 "$FLOOR" >/dev/null
  measure floor sqlite3 "$FLOOR" "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; ATTACH 'file:$STORE?immutable=1' AS o;
    INSERT INTO ZCUSTOMER SELECT * FROM o.ZCUSTOMER; INSERT INTO ZORDER SELECT * FROM o.ZORDER;
    INSERT INTO ZTAG SELECT * FROM o.ZTAG; INSERT INTO Z_2TAGS SELECT * FROM o.Z_2TAGS;"
  # What any command that writes a store of this size must pay, and what SQLite itself pays to
  # do salvage's job on the undamaged file with salvage's guarantees (checked, then flushed
  # before the name appears): the references the time target is read against.
  rm -f "$WORK/dd.sqlite" "$FLOOR"
  measure dd dd if="$STORE" of="$WORK/dd.sqlite" bs=1M conv=fsync status=none
  "$BIN" create --catalog "$CATALOG" --version V1 "$FLOOR" >/dev/null
  measure safe sh -c 'sqlite3 "$1" "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; ATTACH '"'"'file:$2?immutable=1'"'"' AS o;
    INSERT INTO ZCUSTOMER SELECT * FROM o.ZCUSTOMER; INSERT INTO ZORDER SELECT * FROM o.ZORDER;
    INSERT INTO ZTAG SELECT * FROM o.ZTAG; INSERT INTO Z_2TAGS SELECT * FROM o.Z_2TAGS; PRAGMA quick_check;" >/dev/null && sync "$1"' sh "$FLOOR" "$STORE"
  # SQLite's fastest copy of a healthy store: VACUUM INTO moves each table's records and each
  # index's entries across as they are (its transfer optimisation: no decoding, no sort, no
  # index built from the rows), unchecked; flushed like the others.
  rm -f "$WORK/dd.sqlite" "$WORK/vacuum.sqlite"
  measure vac sh -c 'sqlite3 "$1" "VACUUM INTO '"'"'$2'"'"'" && sync "$2"' sh "$STORE" "$WORK/vacuum.sqlite"
  rm -f "$WORK/vacuum.sqlite"
  echo "  round $round: quick_check ${WALL_qc[-1]} s, salvage --catalog ${WALL_cd[-1]} s, plain ${WALL_pl[-1]} s, damaged (zero10) ${WALL_z[-1]} s, INSERT…SELECT floor ${WALL_floor[-1]} s, checked and flushed ${WALL_safe[-1]} s, VACUUM INTO ${WALL_vac[-1]} s, dd+fsync ${WALL_dd[-1]} s"
done
QC=$(median "${WALL_qc[@]}")
printf "%-44s %9s %8s %11s\n" "time (median of $ROUNDS)" "wall (s)" "x qc" "peak RSS"
for row in "qc:PRAGMA quick_check (undamaged)" "cd:salvage --catalog (undamaged)" "z:salvage --catalog (zero10)" "pl:salvage, plain (undamaged)" "floor:sqlite3 INSERT…SELECT into the layout" \
  "safe:  the same, quick_check'd and fsync'd" "vac:sqlite3 VACUUM INTO, fsync'd (unchecked)" "dd:dd copy of the store, fsync'd"; do
  key=${row%%:*}; label=${row#*:}
  eval "w=\$(median \"\${WALL_$key[@]}\"); m=\$(max_mb \"\${RSS_$key[@]}\")"
  printf "%-44s %9s %8s %8s MB\n" "$label" "$w" "$(ratio "$w" "$QC")" "$m"
done
for row in "cd:salvage --catalog (undamaged)" "z:salvage --catalog (zero10)" "pl:salvage, plain (undamaged)"; do
  key=${row%%:*}; label=${row#*:}
  eval "w=\$(median \"\${WALL_$key[@]}\"); m=\$(max_mb \"\${RSS_$key[@]}\")"
  if at_most "$(ratio "$w" "$QC")" 2; then t=MET; else t=MISSED; fi
  target "time, $label <= 2x quick_check" "$t" "$(ratio "$w" "$QC")x"
  if at_most "$m" 64; then t=MET; else t=MISSED; fi
  target "memory, $label <= 64 MB" "$t" "$m MB"
done
echo "integrity_check of the salvaged store: $(sqlite3 "$WORK/t-cd.sqlite" 'PRAGMA integrity_check'); match: $("$BIN" match "$WORK/t-cd.sqlite" --catalog "$CATALOG" --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["outcome"], d["version"])')"

# --- memory on a larger store -----------------------------------------------------------------
if [ "$LARGE_ROWS" != 0 ]; then
  echo
  LARGE="$WORK/large.sqlite"
  make_store "$LARGE" "$LARGE_ROWS"
  python3 "$HELPER" damage "$LARGE" "$WORK/large-zero10.sqlite" zero10 1
  WALL_large=(); RSS_large=(); WALL_lqc=(); RSS_lqc=()
  rm -f "$WORK/l-out.sqlite"
  measure large "$BIN" salvage "$WORK/large-zero10.sqlite" --out "$WORK/l-out.sqlite" --catalog "$CATALOG"
  measure lqc sqlite3 "$LARGE" "PRAGMA quick_check"
  echo "larger store: $(stat -c %s "$LARGE") bytes, $LARGE_ROWS rows: salvage --catalog (zero10) ${WALL_large[0]} s, peak RSS $(max_mb "${RSS_large[@]}") MB (target <= 64); quick_check ${WALL_lqc[0]} s ($(ratio "${WALL_large[0]}" "${WALL_lqc[0]}")x)"
  LS=$(python3 "$HELPER" score "$LARGE" "$WORK/large-zero10.sqlite" "$WORK/l-out.sqlite" --core-data)
  echo "  $LS"
  m=$(max_mb "${RSS_large[@]}")
  if at_most "$m" 64; then t=MET; else t=MISSED; fi
  target "memory, salvage --catalog on the larger store <= 64 MB" "$t" "$m MB"
  complete "recovery, salvage --catalog, larger store, zero10" "$LS"
  rm -f "$WORK/l-out.sqlite" "$WORK/large-zero10.sqlite"
fi

# --- sweeps -----------------------------------------------------------------------------------
if [ "$SWEEPS" != 0 ]; then
  echo
  SMALL="$WORK/small.sqlite"
  make_store "$SMALL" 600
  echo "sweeps on $SMALL ($(stat -c %s "$SMALL") bytes):"
  for kind in truncations zeroed page1 bytes; do
    SW=$(python3 "$HELPER" sweep "$SMALL" "$BIN" "$kind")
    echo "  $kind: $SW"
    if python3 -c "import json,sys; d=json.loads(sys.argv[1]); sys.exit(not (d['failures'] == 0 and d['inputChanged'] == 0 and d['found'] == d['truth']))" "$SW"; then t=MET; else t=MISSED; fi
    target "sweep $kind: exit 0/65, input unchanged, every row found" "$t" "$(field "$SW" found)/$(field "$SW" truth) rows, $(field "$SW" runs) runs, $(field "$SW" refused) refused"
  done
fi
rm -f "$WORK/time.txt" "$WORK/stderr.txt"

echo
echo "targets:"
printf '  %s\n' "${TARGETS[@]}"
if [ "$MISSED" != 0 ]; then echo "some targets were MISSED" >&2; exit 1; fi
echo "all targets met"
