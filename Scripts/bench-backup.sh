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
# Environment: BENCH_WORK (default bench-work/, gitignored), BENCH_SIZE_MB (default 560).
# Every run reads the store from a warm page cache (it is read once first), like the others.
set -euo pipefail
cd "$(dirname "$0")/.."
WORK=${BENCH_WORK:-bench-work}
SIZE_MB=${BENCH_SIZE_MB:-560}

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

# measure NAME COMMAND...: runs it under GNU time; sets WALL and RSS_MB.
measure() {
  local name=$1; shift
  cat "$SRC" >/dev/null
  /usr/bin/time -f "%e %M" -o "$WORK/time.txt" "$@" >/dev/null
  read -r WALL RSS_KB <"$WORK/time.txt"
  RSS_MB=$(awk "BEGIN { printf \"%.1f\", $RSS_KB / 1024 }")
  echo "  ran: $name (${WALL} s)"
}

rm -rf "$WORK/out" "$WORK/T" "$WORK/T.gz" "$WORK/P" "$WORK/P.gz" "$WORK/R" "$WORK/R2"
SRC_BYTES=$(stat -c %s "$SRC")
echo "store: $SRC, $SRC_BYTES bytes; $(nproc) cores; tool: $via"

measure "storerescue backup" "${BACKUP[@]}"
OURS_WALL=$WALL; OURS_RSS=$RSS_MB
GZ=$(ls "$WORK"/out/*.gz)
OURS_BYTES=$(stat -c %s "$GZ")

measure "sqlite3 .backup + gzip -6" sh -c "sqlite3 '$SRC' \".backup '$WORK/T'\" && gzip -6 '$WORK/T'"
GZIP_WALL=$WALL; GZIP_RSS=$RSS_MB; GZIP_BYTES=$(stat -c %s "$WORK/T.gz")

measure "sqlite3 .backup + pigz -6" sh -c "sqlite3 '$SRC' \".backup '$WORK/P'\" && pigz -6 '$WORK/P'"
PIGZ_WALL=$WALL; PIGZ_RSS=$RSS_MB; PIGZ_BYTES=$(stat -c %s "$WORK/P.gz")

if [ "${RESTORE[1]}" = restore ] && [ "${#RESTORE[@]}" -eq 2 ]; then
  measure "storerescue restore" "${RESTORE[@]}" "$GZ" "$WORK/R"
else
  measure "storerescue restore" "${RESTORE[@]}" "$GZ"
fi
REST_WALL=$WALL; REST_RSS=$RSS_MB
measure "gunzip -c > FILE" sh -c "gunzip -c '$GZ' > '$WORK/R2'"
GUNZ_WALL=$WALL; GUNZ_RSS=$RSS_MB

# --- checks ----------------------------------------------------------------------------------
SNAP_BYTES=$(stat -c %s "$WORK/R2")
MANIFEST_SHA=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['snapshotSHA256'])" "${GZ%.gz}.manifest.json")
GUNZIP_SHA=$(sha256sum "$WORK/R2" | cut -d' ' -f1)
cmp -s "$WORK/R" "$WORK/R2" && same="yes" || same="NO"

ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
echo
printf "%-34s %9s %12s %8s %11s\n" "backup" "wall (s)" "bytes" "ratio" "peak RSS"
printf "%-34s %9s %12s %8s %8s MB\n" "storerescue backup" "$OURS_WALL" "$OURS_BYTES" "$(ratio "$SNAP_BYTES" "$OURS_BYTES")" "$OURS_RSS"
printf "%-34s %9s %12s %8s %8s MB\n" "sqlite3 .backup && gzip -6" "$GZIP_WALL" "$GZIP_BYTES" "$(ratio "$SNAP_BYTES" "$GZIP_BYTES")" "$GZIP_RSS"
printf "%-34s %9s %12s %8s %8s MB\n" "sqlite3 .backup && pigz -6" "$PIGZ_WALL" "$PIGZ_BYTES" "$(ratio "$SNAP_BYTES" "$PIGZ_BYTES")" "$PIGZ_RSS"
echo
printf "%-34s %9s %11s\n" "restore" "wall (s)" "peak RSS"
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
