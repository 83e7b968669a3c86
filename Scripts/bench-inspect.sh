#!/usr/bin/env bash
# Benchmark: `storerescue inspect` does work proportional to the schema, not the data.
# Builds a Core Data store of at least 500 MB (no sidecars) from a real sample's schema, then
# times `storerescue inspect STORE` against `sqlite3 STORE .schema` with hyperfine.
# Target (issue 2): inspect within 50 ms wall on that store.
#
#   Scripts/bench-inspect.sh [WORKDIR]     (default WORKDIR: bench-work/inspect, gitignored)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-bench-work/inspect}"
samples="${STORERESCUE_SAMPLES:-../shared/samples}"
mkdir -p "$work"

need=()
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v sqlite3 >/dev/null || need+=(sqlite3)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${need[@]}"
fi

swift build -c release --product storerescue >/dev/null
bin="$(swift build -c release --show-bin-path)/storerescue"

store="$work/big.sqlite"
if [ ! -f "$store" ] || [ "$(stat -c %s "$store")" -lt 500000000 ]; then
  rm -f "$store" "$store"-wal "$store"-shm "$store"-journal
  sample="$samples/stores/swiftdata_CartKitSwiftData_v1.sqlite"
  if [ -f "$sample" ]; then
    cp "$sample" "$store"
  else
    echo "note: $sample not found; building a plain Core Data-shaped store" >&2
    sqlite3 "$store" "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
      CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
      CREATE TABLE ZCARTMODEL (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZMAXITEMCOUNT INTEGER, ZCREATEDAT TIMESTAMP, ZDISPLAYNAME VARCHAR, ZSTATUS VARCHAR, ZMETADATAJSON BLOB);
      INSERT INTO Z_PRIMARYKEY VALUES (3, 'CartModel', 0, 0);"
  fi
  echo "building a store of at least 500 MB in $store ..." >&2
  sqlite3 "$store" "PRAGMA journal_mode=DELETE;
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600000)
    INSERT INTO ZCARTMODEL (Z_PK, Z_ENT, Z_OPT, ZMAXITEMCOUNT, ZCREATEDAT, ZDISPLAYNAME, ZSTATUS, ZMETADATAJSON)
      SELECT i + 10, 3, 1, i % 50, 700000000 + i * 17.5, 'Cart ' || i || ' for customer ' || (i * 7919 % 100000),
             CASE i % 3 WHEN 0 THEN 'open' WHEN 1 THEN 'checkedOut' ELSE 'abandoned' END,
             randomblob(700) FROM n;
    UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZCARTMODEL) WHERE Z_NAME = 'CartModel';" >/dev/null
fi
ls "$store"-* >/dev/null 2>&1 && { echo "error: $store has sidecars; remove them" >&2; exit 1; }
size=$(stat -c %s "$store")
echo "store: $store ($((size / 1000000)) MB, no sidecars)"
"$bin" inspect "$store" | sed -n '1,12p'
echo
hyperfine -N --warmup 3 --runs 30 --export-json "$work/inspect.json" \
  -n "storerescue inspect" "$bin inspect $store" \
  -n "sqlite3 .schema" "sqlite3 $store .schema"
python3 - "$work/inspect.json" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
ours, ref = results["storerescue inspect"], results["sqlite3 .schema"]
print(f"\n{'command':<22}{'mean ms':>10}{'max ms':>10}")
for name, r in (("storerescue inspect", ours), ("sqlite3 .schema", ref)):
    print(f"{name:<22}{r['mean'] * 1000:>10.1f}{r['max'] * 1000:>10.1f}")
print(f"ratio inspect / .schema: {ours['mean'] / ref['mean']:.2f}x")
verdict = "MET" if ours["mean"] * 1000 <= 50 else "NOT MET"
print(f"target: inspect within 50 ms wall -> mean {ours['mean'] * 1000:.1f} ms: {verdict}")
PY
