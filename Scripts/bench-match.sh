#!/usr/bin/env bash
# Benchmark: `storerescue match` against a catalog of 50 versions (target: under 100 ms).
# Generates a catalog of 50 inline versions of a 12-entity app (each version adds an attribute,
# some add an entity), creates a store at version 25 with `storerescue create`, fills it with
# rows, then times `storerescue match` with hyperfine, beside `storerescue inspect` on the same
# store (the reading both share) for reference.
#
#   Scripts/bench-match.sh [WORKDIR]     (default WORKDIR: bench-work/match, gitignored)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-bench-work/match}"
mkdir -p "$work"
command -v hyperfine >/dev/null || {
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq hyperfine sqlite3
}
swift build -c release --product storerescue >/dev/null
bin="$(swift build -c release --show-bin-path)/storerescue"

python3 - "$work/catalog.json" <<'PY'
import json, sys
entities = ["Account", "Budget", "Category", "Device", "Entry", "Goal", "Ledger", "Note", "Payee", "Report", "Rule", "Tag"]
versions = []
for v in range(1, 51):
    ents = []
    count = 8 + min(4, v // 12)          # entities appear over time
    for i, name in enumerate(entities[:count]):
        attrs = [{"name": "id", "type": "UUID", "unique": True}, {"name": "title", "type": "String"},
                 {"name": "createdAt", "type": "Date"}, {"name": "amount", "type": "Decimal", "optional": True}]
        attrs += [{"name": f"field{k}", "type": ["Int32", "String", "Double", "Bool"][k % 4], "optional": True}
                  for k in range((v + i) // 3)]
        rels = []
        if i > 0:
            rels.append({"name": "parent" + entities[0], "destination": entities[0], "inverse": "children" + name, "optional": True})
        ents.append({"name": name, "attributes": attrs, "relationships": rels})
    ents[0]["relationships"] = [{"name": "children" + e["name"], "destination": e["name"], "inverse": "parent" + entities[0],
                                 "toMany": True, "optional": True} for e in ents[1:]]
    versions.append({"name": f"V{v}", "identifiers": [str(v)], "entities": ents})
json.dump({"formatVersion": 1, "app": "Bench", "current": "V50", "versions": versions}, open(sys.argv[1], "w"), indent=1)
PY

store="$work/v25.sqlite"
rm -f "$store" "$store"-wal "$store"-shm
"$bin" create --catalog "$work/catalog.json" --version V25 "$store" >/dev/null
sqlite3 "$store" "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
  INSERT INTO ZENTRY (Z_PK, Z_ENT, Z_OPT, ZTITLE, ZCREATEDAT) SELECT i, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Entry'), 1, 'entry ' || i, 700000000 + i FROM n;
  UPDATE Z_PRIMARYKEY SET Z_MAX = 20000 WHERE Z_NAME = 'Entry';" >/dev/null
"$bin" catalog show "$work/catalog.json" | head -3
"$bin" match "$store" --catalog "$work/catalog.json" | sed -n '1,8p'
echo
hyperfine -N --warmup 3 --runs 30 --export-json "$work/match.json" \
  -n "storerescue match (50 versions)" "$bin match $store --catalog $work/catalog.json" \
  -n "storerescue inspect" "$bin inspect $store"
python3 - "$work/match.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
m, i = r["storerescue match (50 versions)"], r["storerescue inspect"]
print(f"\n{'command':<34}{'mean ms':>10}{'max ms':>10}")
for name, x in (("storerescue match (50 versions)", m), ("storerescue inspect", i)):
    print(f"{name:<34}{x['mean'] * 1000:>10.1f}{x['max'] * 1000:>10.1f}")
print(f"target: match against 50 versions under 100 ms -> mean {m['mean'] * 1000:.1f} ms: {'MET' if m['mean'] < 0.1 else 'NOT MET'}")
PY
