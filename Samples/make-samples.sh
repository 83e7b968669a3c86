#!/usr/bin/env bash
# Regenerates the example stores in Samples/ with storerescue itself (create) and sqlite3.
# The stores are committed; this script documents exactly how they were made.
#
#   Samples/make-samples.sh                  builds storerescue with swift build, then uses it
#   STORERESCUE=/path/to/storerescue Samples/make-samples.sh   uses that binary, builds nothing
#
# Every store is deterministic: fixed rows, fixed dates (seconds since 2001-01-01, Core Data's
# reference date), fixed UUIDs, and a fixed store UUID (create draws a random one; Z_UUID is set
# afterwards). Every store is checkpointed and committed without -wal or -shm.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -n "${STORERESCUE:-}" ]]; then
  bin="$STORERESCUE"
else
  swift build --product storerescue >/dev/null
  bin="$(swift build --show-bin-path)/storerescue"
fi

# fresh OUT: removes OUT and its sidecars (only the sample's own files)
fresh() { rm -f "$1" "$1"-wal "$1"-shm "$1"-journal; }
# finish OUT UUID: fixes the store UUID, checkpoints, removes the sidecars
finish() {
  sqlite3 "$1" "UPDATE Z_METADATA SET Z_UUID = '$2';" "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
  rm -f "$1"-wal "$1"-shm
  echo "wrote $1 ($(wc -c <"$1") bytes)"
}

# Samples/Journal/Journal.sqlite — the scenario of the issues: the Journal app shipped its first
# release with an unversioned schema (no version identifier) on a framework that predates
# NSStoreModelVersionChecksumKey (1241), and users have data in it. A staged migration to V4
# fails with 134504 until the store is adopted as V1; `storerescue match` says so.
out=Samples/Journal/Journal.sqlite
fresh "$out"
"$bin" create --catalog Samples/Journal/catalog.json --version V1 --framework-version 1241 "$out" >/dev/null
sqlite3 "$out" <<'SQL'
BEGIN;
INSERT INTO ZENTRY (Z_PK, Z_ENT, Z_OPT, ZCREATEDAT, ZTITLE, ZBODY) VALUES
  (1, 1, 1, 752112000, 'First day', 'Moved into the new flat. Boxes everywhere.'),
  (2, 1, 2, 752198400, 'Market', 'Bought figs, bread and far too much cheese.'),
  (3, 1, 1, 752284800, 'Rain', NULL),
  (4, 1, 3, 752371200, 'Running', 'Five kilometres along the river, slowly.'),
  (5, 1, 1, 752457600, 'Letters', 'Wrote to grandmother; posted the parcel.');
INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 2, 1, 'home'), (2, 2, 1, 'food'), (3, 2, 1, 'sport');
INSERT INTO Z_1TAGS (Z_1ENTRIES, Z_2TAGS) VALUES (1, 1), (2, 2), (2, 1), (4, 3);
UPDATE Z_PRIMARYKEY SET Z_MAX = 5 WHERE Z_NAME = 'Entry';
UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_NAME = 'Tag';
COMMIT;
SQL
finish "$out" F0CEBCC1-9F3C-44EE-B087-C5E61D97A916

# Samples/Seed004/Items.sqlite — seed 004: a SwiftData app's first release declared a bare
# `@Model class Item` without VersionedSchema. Its store carries no version identifier and no
# NSStoreModelVersionChecksumKey (created from Seed004/unversioned.json, which has no
# `identifiers`, with --framework-version 1241, the last framework that wrote no checksum). The
# app's catalog declares SchemaV1 (identical entities, identifier "1.0.0") and SchemaV2 with a
# plan V1 -> V2: the plan does not know the store (134504) until it is adopted as V1.
out=Samples/Seed004/Items.sqlite
fresh "$out"
"$bin" create --catalog Samples/Seed004/unversioned.json --version unversioned --framework-version 1241 "$out" >/dev/null
sqlite3 "$out" <<'SQL'
BEGIN;
INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZID, ZTITLE, ZTIMESTAMP) VALUES
  (1, 1, 1, '6F1C2A8E-0B7D-4C35-9E21-3A5D8F0B1C01', 'Bench press 60 kg', 788918400),
  (2, 1, 1, '6F1C2A8E-0B7D-4C35-9E21-3A5D8F0B1C02', 'Squats 5x5', 789004800),
  (3, 1, 2, '6F1C2A8E-0B7D-4C35-9E21-3A5D8F0B1C03', 'Rest day', 789091200);
UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_NAME = 'Item';
COMMIT;
SQL
finish "$out" 2D7A4E10-5B3C-4F61-8A09-C4E2B7D61004

# Samples/Seed000/Cats.sqlite — seed 000: SwiftData SchemaV1.Cat (name only), a few cats. V2 adds
# a required `age` with no default: a lightweight stage (catalog.json) fails with 134110 naming
# Cat.age; the custom stage of catalog-with-map.json gives them age 0.
out=Samples/Seed000/Cats.sqlite
fresh "$out"
"$bin" create --catalog Samples/Seed000/catalog.json --version V1 "$out" >/dev/null
sqlite3 "$out" <<'SQL'
BEGIN;
INSERT INTO ZCAT (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES
  (1, 1, 1, 'Rei'), (2, 1, 1, 'Mike'), (3, 1, 3, 'Tama'), (4, 1, 1, 'Kuro');
UPDATE Z_PRIMARYKEY SET Z_MAX = 4 WHERE Z_NAME = 'Cat';
COMMIT;
SQL
finish "$out" 9C4B1E55-3D2A-4B7E-8F60-1A2B3C4D0000

# Samples/Seed001/Lineage.sqlite — seed 001: the ten-version lineage, store at V1 (only the
# optional timestamp; one item without one). Its plan (custom V1->V2, custom V2->V3, [], custom
# V4->V5, [V6], custom V7->V8, [V9, V10]) takes it to V10.
out=Samples/Seed001/Lineage.sqlite
fresh "$out"
"$bin" create --catalog Samples/Seed001/catalog.json --version V1 "$out" >/dev/null
sqlite3 "$out" <<'SQL'
BEGIN;
INSERT INTO ZITEM (Z_PK, Z_ENT, Z_OPT, ZTIMESTAMP) VALUES
  (1, 1, 1, 725846400), (2, 1, 1, 725932800.5), (3, 1, 2, 726019200), (4, 1, 1, NULL), (5, 1, 1, 726192000);
UPDATE Z_PRIMARYKEY SET Z_MAX = 5 WHERE Z_NAME = 'Item';
COMMIT;
SQL
finish "$out" 1A2B3C4D-0001-4001-8001-5EED00000001

# Samples/Damaged/Notes.sqlite — a V1 notes store (3 folders, 300 notes of 120–330 characters,
# 4096-byte pages), then damaged on purpose: after the checkpoint, two whole pages of the ZNOTE
# table's b-tree (leaves in the middle of it, checked below with dbstat) are overwritten with
# zeros — what a lost write or a bad sector leaves. Page 1 (header and schema), Z_METADATA,
# Z_PRIMARYKEY and ZFOLDER are intact, so the version is still known; the notes on the two pages
# are lost; SQLite reports "database disk image is malformed" on a full scan.
out=Samples/Damaged/Notes.sqlite
fresh "$out"
"$bin" create --catalog Samples/Damaged/catalog.json --version V1 "$out" >/dev/null
sqlite3 "$out" <<'SQL'
BEGIN;
INSERT INTO ZFOLDER (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (1, 1, 1, 'Work'), (2, 1, 1, 'Home'), (3, 1, 1, 'Travel');
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
INSERT INTO ZNOTE (Z_PK, Z_ENT, Z_OPT, ZFOLDER, ZCREATEDAT, ZBODY, ZTITLE)
SELECT i, 2, 1 + i % 3, CASE WHEN i % 7 = 0 THEN NULL ELSE 1 + i % 3 END,
       725846400 + i * 3600,
       CASE WHEN i % 11 = 0 THEN NULL ELSE
         printf('Note %d. ', i) || substr(replace(hex(zeroblob(40)), '00',
           'The quick brown fox jumps over the lazy dog. '), 1, 110 + (i * 37) % 220) END,
       printf('Note %03d', i)
FROM n;
UPDATE Z_PRIMARYKEY SET Z_MAX = 3 WHERE Z_NAME = 'Folder';
UPDATE Z_PRIMARYKEY SET Z_MAX = 300 WHERE Z_NAME = 'Note';
COMMIT;
SQL
finish "$out" D4A3A6ED-0000-4000-8000-000000000300
# The damage: pages 12 and 13 (1-based; bytes 45056–53247) zeroed.
damaged_pages="12 13"
for p in $damaged_pages; do
  owner=$(sqlite3 "$out" "SELECT name || ':' || pagetype FROM dbstat WHERE pageno = $p;")
  [[ "$owner" == "ZNOTE:leaf" ]] || { echo "page $p belongs to $owner, not a ZNOTE leaf: pick other pages" >&2; exit 1; }
done
for p in $damaged_pages; do
  dd if=/dev/zero of="$out" bs=4096 seek=$((p - 1)) count=1 conv=notrunc status=none
done
rm -f "$out"-wal "$out"-shm
echo "damaged $out: zeroed pages $damaged_pages"
