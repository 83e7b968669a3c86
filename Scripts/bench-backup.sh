#!/usr/bin/env bash
# Benchmark of `storerescue backup` / `restore` against the usual shell pipelines, from one run:
#   backup:  storerescue backup  vs  sqlite3 SRC ".backup T" && gzip -6 T  vs  the same with pigz -6
#   restore: storerescue restore vs  gunzip -c BACKUP > FILE
# on a generated Core Data-like store of at least 500 MB (Scripts/make-bench-store.py).
# Prints wall times, compressed sizes and ratios, and peak memory (GNU time's maximum RSS).
#
# Targets (2-core machine): backup ≤ 0.55× the sqlite3+gzip wall time, compressed size within 2%
# of gzip -6, peak memory < 64 MB; restore ≤ 1.2× gunzip.
#
# Environment: BENCH_WORK (default bench-work/, gitignored), BENCH_SIZE_MB (default 560),
# BENCH_ROUNDS (default 3). The machine is shared: each round runs every variant once,
# interleaved, and the table shows each variant's median wall time (and its largest peak RSS),
# with every round's times listed below it. Every run reads the store from a warm page cache.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${BENCH_WORK:-bench-work}
SIZE_MB=${BENCH_SIZE_MB:-560}
ROUNDS=${BENCH_ROUNDS:-3}

# --- tools -----------------------------------------------------------------------------------
need=()
command -v pigz >/dev/null || need+=(pigz)
[ -x /usr/bin/time ] || need+=(time)
command -v sqlite3 >/dev/null || need+=(sqlite3)
command -v python3 >/dev/null || need+=(python3)
dpkg -s libsqlite3-dev >/dev/null 2>&1 || need+=(libsqlite3-dev)
dpkg -s zlib1g-dev >/dev/null 2>&1 || need+=(zlib1g-dev)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# --- data and binary -------------------------------------------------------------------------
mkdir -p "$WORK"
SRC="$WORK/bench.sqlite"
if [ ! -f "$SRC" ] || [ "$(stat -c %s "$SRC")" -lt 500000000 ]; then
  echo "building a ${SIZE_MB} MB store in $SRC ..."
  rm -f "$SRC"  # a smaller one from an earlier run: the generator refuses to overwrite
  python3 Scripts/make-bench-store.py "$SRC" "$SIZE_MB"
fi
echo "building storerescue (release) ..."
swift build -c release --product storerescue >/dev/null
swift build -c release --product storerescue-backup-probe >/dev/null
BIN=$(swift build -c release --show-bin-path)
if "$BIN/storerescue" --help 2>/dev/null | grep -qE '^ +backup '; then
  BACKUP=("$BIN/storerescue" backup "$SRC" --to "$WORK/out")
  RESTORE=("$BIN/storerescue" restore --to "$WORK/R")
  via="storerescue"
else
  # The subcommands are not registered in this build of the main command yet: the probe makes
  # exactly the same library calls (BackupRunner.run / BackupRestorer.restore, default options).
  BACKUP=("$BIN/storerescue-backup-probe" backup "$SRC" "$WORK/out")
  RESTORE=("$BIN/storerescue-backup-probe" restore)
  via="storerescue-backup-probe (same library calls; subcommands not registered in this build)"
fi

# measure NAME COMMAND...: runs it under GNU time; appends its wall time and peak RSS (KB) to
# the arrays WALL_<NAME> and RSS_<NAME>.
measure() {
  local name=$1; shift
  cat "$SRC" >/dev/null
  /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" >/dev/null
  local wall rss
  read -r wall rss <"$WORK/time.txt"
  eval "WALL_$name+=($wall); RSS_$name+=($rss)"
}
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
maximum_mb() { printf '%s\n' "$@" | sort -n | tail -1 | awk '{ printf "%.1f", $1 / 1024 }'; }

rm -rf "$WORK/out" "$WORK/T" "$WORK/T.gz" "$WORK/P" "$WORK/P.gz" "$WORK/R" "$WORK/R2"
SRC_BYTES=$(stat -c %s "$SRC")
echo "store: $SRC, $SRC_BYTES bytes; $(nproc) cores; $ROUNDS rounds; tool: $via"
WALL_ours=(); RSS_ours=(); WALL_gzip=(); RSS_gzip=(); WALL_pigz=(); RSS_pigz=()
WALL_restore=(); RSS_restore=(); WALL_gunzip=(); RSS_gunzip=()
for round in $(seq 1 "$ROUNDS"); do
  rm -rf "$WORK/out" "$WORK/T.gz" "$WORK/P.gz" "$WORK/R" "$WORK/R2"
  measure ours "${BACKUP[@]}"
  GZ=$(ls "$WORK"/out/*.gz)
  measure gzip sh -c "sqlite3 '$SRC' \".backup '$WORK/T'\" && gzip -6 '$WORK/T'"
  measure pigz sh -c "sqlite3 '$SRC' \".backup '$WORK/P'\" && pigz -6 '$WORK/P'"
  if [ "${RESTORE[1]}" = restore ] && [ "${#RESTORE[@]}" -eq 2 ]; then
    measure restore "${RESTORE[@]}" "$GZ" "$WORK/R"
  else
    measure restore "${RESTORE[@]}" "$GZ"
  fi
  measure gunzip sh -c "gunzip -c '$GZ' > '$WORK/R2'"
  echo "  round $round: backup ${WALL_ours[-1]} s, sqlite3+gzip ${WALL_gzip[-1]} s, sqlite3+pigz ${WALL_pigz[-1]} s," \
       "restore ${WALL_restore[-1]} s, gunzip ${WALL_gunzip[-1]} s"
done
OURS_WALL=$(median "${WALL_ours[@]}"); OURS_RSS=$(maximum_mb "${RSS_ours[@]}")
GZIP_WALL=$(median "${WALL_gzip[@]}"); GZIP_RSS=$(maximum_mb "${RSS_gzip[@]}")
PIGZ_WALL=$(median "${WALL_pigz[@]}"); PIGZ_RSS=$(maximum_mb "${RSS_pigz[@]}")
REST_WALL=$(median "${WALL_restore[@]}"); REST_RSS=$(maximum_mb "${RSS_restore[@]}")
GUNZ_WALL=$(median "${WALL_gunzip[@]}"); GUNZ_RSS=$(maximum_mb "${RSS_gunzip[@]}")
OURS_BYTES=$(stat -c %s "$GZ")
GZIP_BYTES=$(stat -c %s "$WORK/T.gz")
PIGZ_BYTES=$(stat -c %s "$WORK/P.gz")

# --- checks ----------------------------------------------------------------------------------
SNAP_BYTES=$(stat -c %s "$WORK/R2")
MANIFEST_SHA=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['snapshotSHA256'])" "${GZ%.gz}.manifest.json")
GUNZIP_SHA=$(sha256sum "$WORK/R2" | cut -d' ' -f1)
cmp -s "$WORK/R" "$WORK/R2" && same="yes" || same="NO"

ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
echo
printf "%-34s %9s %12s %8s %11s\n" "backup (median of $ROUNDS)" "wall (s)" "bytes" "ratio" "peak RSS"
printf "%-34s %9s %12s %8s %8s MB\n" "storerescue backup" "$OURS_WALL" "$OURS_BYTES" "$(ratio "$SNAP_BYTES" "$OURS_BYTES")" "$OURS_RSS"
printf "%-34s %9s %12s %8s %8s MB\n" "sqlite3 .backup && gzip -6" "$GZIP_WALL" "$GZIP_BYTES" "$(ratio "$SNAP_BYTES" "$GZIP_BYTES")" "$GZIP_RSS"
printf "%-34s %9s %12s %8s %8s MB\n" "sqlite3 .backup && pigz -6" "$PIGZ_WALL" "$PIGZ_BYTES" "$(ratio "$SNAP_BYTES" "$PIGZ_BYTES")" "$PIGZ_RSS"
echo
printf "%-34s %9s %11s\n" "restore (median of $ROUNDS)" "wall (s)" "peak RSS"
printf "%-34s %9s %8s MB\n" "storerescue restore" "$REST_WALL" "$REST_RSS"
printf "%-34s %9s %8s MB\n" "gunzip -c > FILE" "$GUNZ_WALL" "$GUNZ_RSS"
echo
echo "backup time vs sqlite3+gzip:   $(ratio "$OURS_WALL" "$GZIP_WALL")x  (target <= 0.55)"
echo "backup time vs sqlite3+pigz:   $(ratio "$OURS_WALL" "$PIGZ_WALL")x"
echo "compressed size vs gzip -6:    $(ratio "$OURS_BYTES" "$GZIP_BYTES")x  (target <= 1.02)"
echo "backup peak memory:            ${OURS_RSS} MB  (target < 64)"
echo "restore time vs gunzip:        $(ratio "$REST_WALL" "$GUNZ_WALL")x  (target <= 1.2)"
echo "gunzip output = manifest SHA:  $([ "$MANIFEST_SHA" = "$GUNZIP_SHA" ] && echo yes || echo NO); restore = gunzip output: $same"
rm -rf "$WORK/T.gz" "$WORK/P.gz" "$WORK/R" "$WORK/R2" "$WORK/time.txt"
