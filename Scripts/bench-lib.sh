# Shared parts of the benchmarks and the crash harness; sourced, never run:
#   Scripts/bench-migrate.sh, Scripts/bench-upgrade.sh, Scripts/crash-upgrade.sh,
#   Scripts/bench-salvage.sh (bench_tools only)
#
# bench_tools PKG…             installs what is missing (Debian packages), once
# bench_binary WORK            sets BIN: BENCH_BIN, or a release build in .build-bench
# bench_catalog WORK           sets CATALOG: the 4-version Ledger catalog (checked by `catalog show`)
# bench_make_store PATH ROWS   a V1 store of ROWS rows (`create` + one INSERT … SELECT), cached
# bench_hand_sql WORK          sets HAND (the fused V1 → V4 rebuild in SQL) and V4_COLUMNS (V4's)
# bench_measure_hand_sql STORE COPY
#                              one timed run of HAND on a fresh copy of STORE at COPY: the copy
#                              timed apart (WALL_copy, RSS_copy), the SQL as WALL_hand, RSS_hand;
#                              COPY is left for the caller's checks
# bench_wait_for_quiet         waits (sleep 60) for a 1-minute load ≤ BENCH_LOAD_MAX (1.5), at most
#                              BENCH_LOAD_WAIT_MAX minutes (10) in all; sets LOAD_SEEN to the
#                              load the timed run starts at (recorded: the machine is shared)
# bench_measure NAME CMD…      runs CMD under GNU time (stdout to BENCH_STDOUT, else /dev/null):
#                              appends wall (s) and peak RSS (KB) to WALL_<NAME> and RSS_<NAME>
# bench_median N…, bench_max N…, bench_ratio A B
# bench_match STORE            prints "<outcome> <version>" from `match --json`
# shellcheck shell=bash

BENCH_LOAD_MAX=${BENCH_LOAD_MAX:-1.5}
BENCH_LOAD_WAIT_MAX=${BENCH_LOAD_WAIT_MAX:-10}

bench_tools() {
  local need=() tool
  for tool in "$@"; do
    case $tool in
      time) [ -x /usr/bin/time ] || need+=(time) ;;
      *-dev) dpkg -s "$tool" >/dev/null 2>&1 || need+=("$tool") ;;
      gcc) command -v cc >/dev/null || need+=(gcc) ;;
      *) command -v "$tool" >/dev/null || need+=("$tool") ;;
    esac
  done
  [ ${#need[@]} -eq 0 ] && return
  local sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
}

bench_binary() {
  if [ -n "${BENCH_BIN:-}" ]; then
    BIN=$BENCH_BIN
  else
    echo "building storerescue (release, .build-bench) ..." >&2
    swift build -c release --build-path .build-bench --product storerescue >"$1/build.log" 2>&1 \
      || { tail -30 "$1/build.log" >&2; echo "the release build failed" >&2; exit 1; }
    BIN="$(swift build -c release --build-path .build-bench --show-bin-path)/storerescue"
  fi
  BUILT_FROM="$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git status --porcelain -- Sources 2>/dev/null | grep -q . && echo ' + uncommitted Sources changes' || true)"
}

# One entity, `Entry`, 10 attributes at V1 (strings of varied length, dates, a double, an integer,
# a Boolean, NULLs here and there):
#   V2  adds the required `summary`, filled by the custom stage's `map`;
#   V3  removes `legacyCode` and renames `author` to `authorName` (renaming identifier);
#   V4  adds the fetch index `byCategoryAndDate` (category, createdAt descending).
# Plan: custom V1 → V2, then lightweight [V3, V4] (two hops the engine fuses into one rebuild).
# A fetch index changes no entity hash: V4's versionHashModifier gives it a checksum of its own
# (without it the plan is refused: V3 and V4 would have the same checksum).
bench_catalog() {
  CATALOG="$1/catalog.json"
  python3 - "$CATALOG" <<'PY'
import json, sys
v1 = [
    {"name": "title", "type": "String"},
    {"name": "body", "type": "String", "optional": True},
    {"name": "createdAt", "type": "Date"},
    {"name": "modifiedAt", "type": "Date", "optional": True},
    {"name": "amount", "type": "Double", "optional": True},
    {"name": "quantity", "type": "Int32", "default": 0},
    {"name": "isArchived", "type": "Bool", "default": False},
    {"name": "category", "type": "String", "optional": True},
    {"name": "author", "type": "String", "optional": True},
    {"name": "legacyCode", "type": "String", "optional": True},
]
v2 = v1 + [{"name": "summary", "type": "String"}]
v3 = [a for a in v2 if a["name"] not in ("author", "legacyCode")]
v3.insert(8, {"name": "authorName", "type": "String", "optional": True, "originalName": "author"})
entry = lambda attributes, **extra: [dict(name="Entry", attributes=attributes, **extra)]
catalog = {
    "formatVersion": 1, "app": "Ledger", "current": "V4",
    "notes": "bench-lib.sh: a required attribute filled by map (V2), one removed and one renamed (V3), a fetch index (V4)",
    "versions": [
        {"name": "V1", "identifiers": ["1"], "entities": entry(v1)},
        {"name": "V2", "identifiers": ["2"], "entities": entry(v2)},
        {"name": "V3", "identifiers": ["3"], "entities": entry(v3)},
        {"name": "V4", "identifiers": ["4"], "entities": entry(v3, versionHashModifier="byCategoryAndDate", fetchIndexes=[
            {"name": "byCategoryAndDate", "elements": ["category", {"property": "createdAt", "ascending": False}]}])},
    ],
    "stages": [
        {"kind": "custom", "from": "V1", "to": "V2", "map": {"Entry": {"summary": "substr(coalesce(body, title), 1, 48)"}}},
        {"kind": "lightweight", "versions": ["V3", "V4"]},
    ],
}
json.dump(catalog, open(sys.argv[1], "w"), indent=1)
PY
  if ! "$BIN" catalog show "$CATALOG" >"$1/catalog-show.txt" || ! grep -A1 '^Plan' "$1/catalog-show.txt" | grep -q 'ok:'; then
    cat "$1/catalog-show.txt" >&2; echo "the catalog's plan is refused" >&2; exit 1
  fi
}

# bench_make_store PATH ROWS: `create --version V1`, then ROWS rows in one INSERT … SELECT
# (titles 6–55 bytes, bodies 4–203 bytes, one in 7 NULL), left in WAL mode and checkpointed as
# Core Data leaves it. Remade only when the row count or the catalog changed (PATH.stamp).
bench_make_store() {
  local path=$1 rows=$2 stamp
  stamp="$rows $(sha256sum "$CATALOG" | cut -c1-16) v1"
  if [ -f "$path" ] && [ "$(cat "$path.stamp" 2>/dev/null)" = "$stamp" ]; then return; fi
  echo "making $path ($rows rows) ..." >&2
  rm -f "$path" "$path-wal" "$path-shm" "$path.stamp"
  "$BIN" create --catalog "$CATALOG" --version V1 "$path" >/dev/null
  sqlite3 "$path" >/dev/null <<SQL
PRAGMA journal_mode = DELETE;
PRAGMA synchronous = OFF;
BEGIN;
WITH RECURSIVE
  n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $rows),
  words(t) AS (SELECT 'Invoice for the quarterly order of office supplies, shipped to the main warehouse after the customer confirmed the revised total. Pending refund: two boxes arrived damaged and were returned; note that the carrier owes a credit. Müller & Søn asked for a consolidated statement, in euros, with every line item and its tax rate — see the attached receipt. Meeting notes: budget review moved to Thursday; Kofi brings the forecast, Hana the hiring plan. Travel: Porto → Zürich, two nights, hotel near the station; expenses under the daily limit. Reminder to renew the domain, rotate the API keys, archive last year''s ledger and close the old savings account before the end of the month.')
INSERT INTO ZENTRY (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZBODY, ZCREATEDAT, ZMODIFIEDAT, ZAMOUNT, ZQUANTITY, ZISARCHIVED, ZCATEGORY, ZAUTHOR, ZLEGACYCODE)
SELECT i, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Entry'), 1 + i % 4,
  substr(t, 1 + (i * 37) % 500, 6 + (i * 13) % 50),
  CASE WHEN i % 7 = 0 THEN NULL ELSE substr(t, 1 + (i * 11) % 400, 4 + (i * 104729) % 200) END,
  600000000.0 + i * 17.31 + ((i * 2654435761) % 86400) / 1000.0,
  CASE WHEN i % 3 = 0 THEN NULL ELSE 600000000.0 + i * 17.31 + 3600 * (i % 50) END,
  CASE WHEN i % 10 = 0 THEN NULL ELSE ((i * 48271) % 100000) / 100.0 END,
  (i * 16807) % 50,
  i % 9 = 0,
  CASE WHEN i % 11 = 0 THEN NULL ELSE 'Category ' || ((i * 31) % 40) END,
  CASE WHEN i % 5 = 0 THEN NULL ELSE
    json_extract('["Anna","Ben","Carla","Dmitri","Elif","Farah","Goran","Hana","Ivo","Jun","Kofi","Lea"]', '\$[' || (i % 12) || ']')
    || ' ' || json_extract('["Smith","Müller","Rossi","Nakamura","Okafor","Silva","Novak","Haddad","Larsen","Kim"]', '\$[' || ((i / 12) % 10) || ']') END,
  CASE WHEN i % 4 = 0 THEN NULL ELSE printf('LC-%06d-%s', (i * 7919) % 1000000, substr('ABCDEFGHJKLMNPQRSTUVWXYZ', 1 + i % 20, 3)) END
FROM n, words;
UPDATE Z_PRIMARYKEY SET Z_MAX = (SELECT max(Z_PK) FROM ZENTRY) WHERE Z_NAME = 'Entry';
COMMIT;
PRAGMA journal_mode = WAL;
PRAGMA wal_checkpoint(TRUNCATE);
SQL
  echo "$stamp" >"$path.stamp"
}

# The hand-written baseline: one transaction on a copy of the V1 store — CREATE TABLE with V4's
# exact text (what `create --version V4` writes), INSERT … SELECT computing `summary` with the
# catalog's expression, dropping `legacyCode`, renaming `author`, DROP TABLE, ALTER TABLE …
# RENAME, V4's indexes, then Z_PRIMARYKEY and Z_METADATA (V4's metadata plist).
bench_hand_sql() {
  local work=$1 empty="$1/empty-v4.sqlite" select_list create_table indexes plist
  rm -f "$empty" "$empty-wal" "$empty-shm"
  "$BIN" create --catalog "$CATALOG" --version V4 "$empty" >/dev/null
  select_list=$(sqlite3 "$empty" "SELECT name FROM pragma_table_info('ZENTRY') ORDER BY cid" | while read -r column; do
    case $column in
      ZSUMMARY) echo "substr(coalesce(ZBODY, ZTITLE), 1, 48)" ;;
      ZAUTHORNAME) echo "ZAUTHOR" ;;
      *) echo "$column" ;;
    esac
  done | paste -sd, - | sed 's/,/, /g')
  V4_COLUMNS=$(sqlite3 "$empty" "SELECT group_concat(name, ', ') FROM (SELECT name FROM pragma_table_info('ZENTRY') ORDER BY cid)")
  create_table=$(sqlite3 "$empty" "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'ZENTRY'")
  indexes=$(sqlite3 "$empty" "SELECT sql || ';' FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ZENTRY' AND sql IS NOT NULL")
  plist=$(sqlite3 "$empty" "SELECT hex(Z_PLIST) FROM Z_METADATA")
  HAND="$work/hand-v1-to-v4.sql"
  cat >"$HAND" <<SQL
BEGIN;
${create_table/CREATE TABLE ZENTRY /CREATE TABLE ZENTRY_NEW };
INSERT INTO ZENTRY_NEW ($V4_COLUMNS)
  SELECT $select_list FROM ZENTRY;
DROP TABLE ZENTRY;
ALTER TABLE ZENTRY_NEW RENAME TO ZENTRY;
$indexes
UPDATE Z_PRIMARYKEY SET Z_MAX = max(Z_MAX, (SELECT coalesce(max(Z_PK), 0) FROM ZENTRY)) WHERE Z_NAME = 'Entry';
UPDATE Z_METADATA SET Z_PLIST = X'$plist';
COMMIT;
SQL
  grep -q 'CREATE TABLE ZENTRY_NEW' "$HAND" || { echo "could not rename the table in V4's CREATE TABLE" >&2; exit 1; }
}

# The same baseline run for every benchmark that compares with it (bench-migrate.sh, and
# bench-upgrade.sh in each of its rounds): the copy is made, and synced, outside the SQL's time.
bench_measure_hand_sql() {
  local store=$1 copy=$2
  rm -f "$copy" "$copy-wal" "$copy-shm" "$copy-journal"
  sync
  bench_measure copy cp "$store" "$copy"
  sync
  bench_measure hand sqlite3 "$copy" ".read $HAND"
}

bench_load() { cut -d' ' -f1 /proc/loadavg; }

BENCH_WAITED=0  # minutes spent waiting so far, over the whole script
bench_wait_for_quiet() {
  LOAD_SEEN=$(bench_load)
  while awk -v l="$LOAD_SEEN" -v m="$BENCH_LOAD_MAX" 'BEGIN { exit !(l > m) }'; do
    if [ "$BENCH_WAITED" -ge "$BENCH_LOAD_WAIT_MAX" ]; then
      echo "  1-minute load $LOAD_SEEN > $BENCH_LOAD_MAX after $BENCH_WAITED min of waiting: timing anyway (the load is recorded)" >&2
      return
    fi
    echo "  1-minute load $LOAD_SEEN > $BENCH_LOAD_MAX: waiting 60 s ..." >&2
    sleep 60
    BENCH_WAITED=$((BENCH_WAITED + 1))
    LOAD_SEEN=$(bench_load)
  done
}

bench_measure() {
  local name=$1 wall rss timing
  shift
  timing=$(mktemp)
  /usr/bin/time -f "%e %M" -o "$timing" "$@" >"${BENCH_STDOUT:-/dev/null}"
  read -r wall rss <"$timing"
  rm -f "$timing"
  eval "WALL_$name+=($wall); RSS_$name+=($rss)"
}

bench_median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
bench_max() { printf '%s\n' "$@" | sort -g | tail -1; }
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
bench_mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

bench_match() {
  local json
  json=$("$BIN" match "$1" --catalog "$CATALOG" --json 2>/dev/null || true)
  python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("outcome"), d.get("version"))' <<<"$json" 2>/dev/null || echo "? ?"
}
