#!/usr/bin/env bash
# Regenerates the example stores in Samples/ with storerescue itself (create) and sqlite3.
# The stores are committed; this script documents exactly how they were made.
#
# Samples/Journal/Journal.sqlite — the scenario of the issues: the Journal app shipped its first
# release with an unversioned schema (no version identifier) on a framework that predates
# NSStoreModelVersionChecksumKey (1241), and users have data in it. A staged migration to V4
# fails with 134504 until the store is adopted as V1; `storerescue match` says so.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --product storerescue >/dev/null
bin="$(swift build --show-bin-path)/storerescue"
out=Samples/Journal/Journal.sqlite
rm -f "$out" "$out"-wal "$out"-shm "$out"-journal
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
PRAGMA wal_checkpoint(TRUNCATE);
SQL
rm -f "$out"-wal "$out"-shm
echo "wrote $out"
