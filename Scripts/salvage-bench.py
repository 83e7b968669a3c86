#!/usr/bin/env python3
"""Helpers for Scripts/bench-salvage.sh: fill a store, damage copies of it, compute which rows a
salvage must recover (from the page bytes of the damaged file and the undamaged original), run
the anchors, and score any output against that truth.

  salvage-bench.py fill STORE ROWS            fill a store made by `storerescue create` (bench catalog)
  salvage-bench.py damage ORIGINAL OUT KIND SEED
        KIND: zero10 (10 consecutive pages zeroed in the middle), flip200 (200 random bytes
        replaced by a different random value), truncate (cut to 2/3 of its size), zero:P (page P
        zeroed), cut:N (cut to N bytes), flip:OFFSET (that byte inverted)
  salvage-bench.py anchor-select DAMAGED OUT  rows `SELECT *` returns per table before its first error
  salvage-bench.py anchor-probe DAMAGED OUT   rowid ranges probed, split in halves around errors
  salvage-bench.py anchor-recover DAMAGED OUT `sqlite3 DAMAGED .recover | sqlite3 OUT`
  salvage-bench.py score ORIGINAL DAMAGED OUTPUT [--core-data]
        prints one JSON line: truth and recovered counts (see below)
  salvage-bench.py sweep ORIGINAL STORERESCUE KIND...
        KIND: truncations (at every page boundary), zeroed (each page in turn), page1 (every byte of
        page 1 inverted), bytes (100 seeds of 50 random bytes replaced). Salvages each damaged
        copy (plain mode) and checks: exit status 0 or 65, the damaged file unchanged, every row
        whose cell lies on an intact page found in the output (in its table, under a damaged table
        name, or in lost_and_found_<n> when the schema row is gone), and no row of one table in
        another ("misplaced"). Prints one JSON line.

Truth. A page is intact when its bytes in the damaged file equal the original's (a page cut short
or beyond the end is not). A row's cell lies on an intact page when the table leaf that holds it in
the original is intact. Such a row must be recovered exactly (every value equal, storage class
included) when its overflow pages are intact too; when its cell is intact but an overflow page is
not, it is counted apart ("partial truth"): it is recovered if it is present at all.
Core Data mode (--core-data) allows what salvage does on purpose: a to-one value set to NULL when
the row it points to was not recovered, and a join row dropped when one of its ends was not.
"""
import json
import os
import random
import sqlite3
import struct
import subprocess
import sys

# --- fill ------------------------------------------------------------------------------------

def fill(path, rows):
    rng = random.Random(20261123)
    syllables = ["ka", "lo", "mi", "ne", "to", "ra", "shi", "vu", "den", "por", "tal", "gre", "bi", "zu", "qua"]
    vocabulary = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(2000)]
    vocabulary += ["the", "and", "order", "invoice", "shipped", "pending", "customer", "refund", "note"] * 30
    first = ["Anna", "Ben", "Carla", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Léa"]
    last = ["Smith", "Müller", "Rossi", "Nakamura", "Okafor", "Silva", "Novak", "Haddad", "Larsen", "Kim"]
    cities = ["Zürich", "Lagos", "Osaka", "Porto", "Quito", "Tallinn", "Austin", "Pune", "Lyon", "Perth"]
    statuses = ["new", "paid", "shipped", "delivered", "returned", "cancelled"]

    def sentence(n):
        return " ".join(rng.choice(vocabulary) for _ in range(n)).capitalize() + "."

    def blob(low, high):
        pattern = bytes(rng.randrange(256) for _ in range(16))
        body = bytearray(pattern * (rng.randint(low, high) // 16 + 1))
        for _ in range(len(body) // 16):
            body[rng.randrange(len(body))] = rng.randrange(256)
        return bytes(body)

    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous = OFF")
    ents = dict(db.execute("SELECT Z_NAME, Z_ENT FROM Z_PRIMARYKEY"))
    customers = rows // 4
    orders = rows - customers - 50
    tags = 50
    db.execute("BEGIN")
    for pk in range(1, customers + 1):
        f, l = rng.choice(first), rng.choice(last)
        avatar = blob(200, 9000) if rng.random() < 0.08 else None
        db.execute("INSERT INTO ZCUSTOMER (Z_PK, Z_ENT, Z_OPT, ZCREATEDAT, ZCITY, ZEMAIL, ZFIRSTNAME, ZLASTNAME, ZNOTES, ZAVATAR)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (pk, ents["Customer"], rng.randint(1, 4), 600_000_000 + rng.random() * 1e8,
                    rng.choice(cities) if rng.random() < 0.9 else None, f"{f.lower()}.{l.lower()}{pk}@example.com",
                    f, l, sentence(rng.randint(3, 30)) if rng.random() < 0.7 else None, avatar))
    for pk in range(1, tags + 1):
        db.execute("INSERT INTO ZTAG (Z_PK, Z_ENT, Z_OPT, ZNAME) VALUES (?,?,1,?)", (pk, ents["Tag"], f"tag-{rng.choice(vocabulary)}-{pk}"))
    joins = 0
    for pk in range(1, orders + 1):
        gift = rng.random() < 0.1
        amount = round(rng.random() * 500, 2) if rng.random() < 0.8 else rng.randint(1, 900)
        db.execute("INSERT INTO ZORDER (Z_PK, Z_ENT, Z_OPT, ZQUANTITY, ZCUSTOMER, ZDATE, ZAMOUNT, ZCOMMENT, ZSTATUS, ZMESSAGE, ZRECEIPT)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                   (pk, ents["GiftOrder" if gift else "Order"], 1, rng.randint(1, 9), rng.randint(1, customers),
                    float(700_000_000 + rng.randint(0, 10**8)), amount, sentence(rng.randint(2, 20)) if rng.random() < 0.5 else None,
                    rng.choice(statuses), sentence(4) if gift else None, blob(100, 6000) if rng.random() < 0.04 else None))
        for tag in rng.sample(range(1, tags + 1), rng.choice([0, 0, 1, 1, 2])):
            db.execute("INSERT INTO Z_2TAGS (Z_2ORDERS, Z_4TAGS) VALUES (?, ?)", (pk, tag))
            joins += 1
    db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Customer'", (customers,))
    db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Order'", (orders,))
    db.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = ? WHERE Z_NAME = 'Tag'", (tags,))
    db.execute("COMMIT")
    # Some deletions, so the freelist holds deleted rows as real stores do.
    db.execute("DELETE FROM ZCUSTOMER WHERE Z_PK % 97 = 0")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    print(f"{path}: {customers} customers, {orders} orders, {tags} tags, {joins} join rows, {os.path.getsize(path)} bytes")

# --- damage ----------------------------------------------------------------------------------

def page_size_of(path):
    with open(path, "rb") as f:
        head = f.read(100)
    size = struct.unpack(">H", head[16:18])[0]
    return 65536 if size == 1 else size

def damage(original, out, kind, seed):
    data = bytearray(open(original, "rb").read())
    rng = random.Random(int(seed))
    ps = page_size_of(original)
    pages = len(data) // ps
    if kind == "zero10":
        start = pages // 2
        data[start * ps:(start + 10) * ps] = bytes(10 * ps)
    elif kind == "flip200":
        for offset in rng.sample(range(len(data)), 200):
            data[offset] = (data[offset] + rng.randint(1, 255)) % 256
    elif kind == "truncate":
        data = data[:len(data) * 2 // 3]
    elif kind.startswith("zero:"):
        page = int(kind[5:])
        data[(page - 1) * ps:page * ps] = bytes(ps)
    elif kind.startswith("cut:"):
        data = data[:int(kind[4:])]
    elif kind.startswith("flip:"):
        offset = int(kind[5:])
        data[offset] ^= 0xFF
    else:
        sys.exit(f"unknown damage {kind}")
    open(out, "wb").write(bytes(data))

# --- truth -----------------------------------------------------------------------------------

def varint(b, i):
    value = 0
    for n in range(8):
        c = b[i + n]
        value = (value << 7) | (c & 0x7F)
        if c < 0x80:
            return value, n + 1
    return (value << 8) | b[i + 8], 9

class Pages:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        self.ps = page_size_of(path)
        self.usable = self.ps - self.data[20]

    def page(self, n):
        return self.data[(n - 1) * self.ps:n * self.ps]

def cells_of_table(pages, root):
    """(rowid, leaf page, overflow pages) of every row of the table b-tree at `root`."""
    out = []
    stack = [root]
    u = pages.usable
    while stack:
        n = stack.pop()
        p = pages.page(n)
        h = 100 if n == 1 else 0
        kind = p[h]
        count = struct.unpack(">H", p[h + 3:h + 5])[0]
        if kind == 5:
            for i in range(count):
                off = struct.unpack(">H", p[h + 12 + 2 * i:h + 14 + 2 * i])[0]
                stack.append(struct.unpack(">I", p[off:off + 4])[0])
            stack.append(struct.unpack(">I", p[h + 8:h + 12])[0])
        elif kind == 13:
            for i in range(count):
                off = struct.unpack(">H", p[h + 8 + 2 * i:h + 10 + 2 * i])[0]
                size, a = varint(p, off)
                rowid, b = varint(p, off + a)
                local = size
                if size > u - 35:
                    m = ((u - 12) * 32 // 255) - 23
                    k = m + ((size - m) % (u - 4))
                    local = k if k <= u - 35 else m
                overflow = []
                if local < size:
                    nxt = struct.unpack(">I", p[off + a + b + local:off + a + b + local + 4])[0]
                    remaining = size - local
                    while remaining > 0 and nxt:
                        overflow.append(nxt)
                        remaining -= u - 4
                        nxt = struct.unpack(">I", pages.page(nxt)[:4])[0]
                out.append((rowid if rowid < 2**63 else rowid - 2**64, n, overflow))
    return out

def truth(original, damaged):
    """table -> (rowids that must be recovered exactly, rowids whose cell is intact but not their overflow)."""
    o = Pages(original)
    d = open(damaged, "rb").read()
    ps = o.ps

    def intact(n):
        chunk = d[(n - 1) * ps:n * ps]
        return len(chunk) == ps and chunk == o.page(n)

    db = sqlite3.connect(f"file:{original}?immutable=1", uri=True)
    result = {}
    for name, root in db.execute("SELECT name, rootpage FROM sqlite_master WHERE type = 'table' AND rootpage > 0"):
        exact, partial = set(), set()
        for rowid, leaf, overflow in cells_of_table(o, root):
            if intact(leaf):
                (exact if all(intact(x) for x in overflow) else partial).add(rowid)
        result[name] = (exact, partial)
    return result

# --- anchors ---------------------------------------------------------------------------------

def copy_schema(src, out):
    db = sqlite3.connect(out)
    for name, sql in src.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"):
        db.execute(sql)
    db.commit()
    return db

def insert_row(db, name, columns, row, verb="INSERT"):
    """Copies a row read from the damaged file; text that is not valid UTF-8 (damage) is skipped."""
    try:
        db.execute(f'{verb} INTO "{name}" (rowid, {columns}) VALUES ({", ".join(["?"] * len(row))})', row)
    except UnicodeEncodeError:
        pass

def open_anchor(anchor, damaged, out):
    """The damaged file opened by SQLite, its table names, and the output with the same tables;
    None (said on stdout) when SQLite cannot even read the schema."""
    try:
        src = lenient(sqlite3.connect(f"file:{damaged}?immutable=1", uri=True))
        names = [r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        return src, names, copy_schema(src, out)
    except sqlite3.Error as error:
        print(json.dumps({"anchor": anchor, "opened": False, "error": str(error)}))
        return None

def anchor_select(damaged, out):
    opened = open_anchor("select", damaged, out)
    if opened is None:
        return
    src, names, dst = opened
    failed = []
    for name in names:
        try:
            cursor = src.execute(f'SELECT rowid, * FROM "{name}"')
            columns = ", ".join(c[0] for c in cursor.description[1:])
            for row in cursor:
                insert_row(dst, name, columns, row)
        except sqlite3.Error as error:
            failed.append(f"{name}: {error}")
    dst.commit()
    print(json.dumps({"anchor": "select", "opened": True, "failedTables": failed}))

def anchor_probe(damaged, out):
    opened = open_anchor("probe", damaged, out)
    if opened is None:
        return
    src, names, dst = opened
    queries = 0
    for name in names:
        columns = None
        stack = [(-(2**31), 2**31)]
        while stack:
            lo, hi = stack.pop()
            queries += 1
            try:
                cursor = src.execute(f'SELECT rowid, * FROM "{name}" WHERE rowid BETWEEN ? AND ?', (lo, hi))
                rows = cursor.fetchall()
                columns = [c[0] for c in cursor.description[1:]]
            except sqlite3.Error:
                if lo < hi:
                    mid = (lo + hi) // 2
                    stack += [(mid + 1, hi), (lo, mid)]
                continue
            for row in rows:
                insert_row(dst, name, ", ".join(columns), row, "INSERT OR IGNORE")
    dst.commit()
    print(json.dumps({"anchor": "probe", "opened": True, "queries": queries}))

def anchor_recover(damaged, out):
    sql = subprocess.run(["sqlite3", damaged, ".recover"], capture_output=True)
    if sql.returncode != 0 or b"sql error" in sql.stderr:
        print(json.dumps({"anchor": "recover", "available": False, "error": sql.stderr.decode(errors="replace").strip()[:200]}))
        return
    subprocess.run(["sqlite3", out], input=sql.stdout, check=False, capture_output=True)
    print(json.dumps({"anchor": "recover", "available": True}))

# --- score -----------------------------------------------------------------------------------

def lenient(connection):
    # Damaged text need not be valid UTF-8: keep it as text (str) with its bytes escaped.
    connection.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
    return connection

def score(original, damaged, output, core_data):
    t = truth(original, damaged)
    o = lenient(sqlite3.connect(f"file:{original}?immutable=1", uri=True))
    try:
        r = lenient(sqlite3.connect(f"file:{output}?immutable=1", uri=True))
        r.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        r = None
    totals = dict(truth=0, recovered=0, partialTruth=0, partialRecovered=0, otherRows=0, altered=0, allowedDropped=0)
    skipped = {"Z_METADATA", "Z_PRIMARYKEY", "Z_MODELCACHE"}  # rebuilt on purpose, compared elsewhere
    present = {}
    if r is not None:
        for (name,) in r.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            try:
                present[name] = {row[0]: row[1:] for row in r.execute(f'SELECT rowid, * FROM "{name}"')}
            except sqlite3.Error:
                present[name] = {}
    recovered_pks = {name: set(rows) for name, rows in present.items()}
    for name, (exact, partial) in t.items():
        if name in skipped:
            continue
        cursor = o.execute(f'SELECT rowid, * FROM "{name}"')
        columns = [c[0] for c in cursor.description[1:]]
        original_rows = {row[0]: row[1:] for row in cursor}
        got = present.get(name, {})
        for rowid in exact:
            totals["truth"] += 1
            want = original_rows[rowid]
            have = got.get(rowid)
            if core_data and name.startswith("Z_") and have is None:
                # A join row salvage drops on purpose when an end was not recovered.
                ends = [(c, v) for c, v in zip(columns, want) if c.startswith("Z_") and not c.startswith("Z_FOK_")]
                if any(not ends_recovered(c, v, recovered_pks) for c, v in ends):
                    totals["truth"] -= 1
                    totals["allowedDropped"] += 1
                    continue
                have = next((row for row in got.values() if row == want), None)
            if have is not None and core_data and have != want:
                have = tuple(h if h is not None or not is_dangling(c, w, recovered_pks) else w for c, h, w in zip(columns, have, want))
            if have == want and all(type(a) is type(b) for a, b in zip(have, want)):
                totals["recovered"] += 1
        for rowid in partial:
            totals["partialTruth"] += 1
            if rowid in got:
                totals["partialRecovered"] += 1
        for rowid, row in got.items():
            if rowid in exact or rowid in partial:
                continue
            totals["otherRows"] += 1
            if original_rows.get(rowid) != row:
                totals["altered"] += 1
    print(json.dumps(totals))

# Core Data columns that hold another row's Z_PK, for the bench model: column -> target table.
REFERENCES = {"ZCUSTOMER": "ZCUSTOMER", "Z_2ORDERS": "ZORDER", "Z_4TAGS": "ZTAG"}

def ends_recovered(column, value, recovered):
    target = REFERENCES.get(column)
    return target is None or value in recovered.get(target, set())

def is_dangling(column, value, recovered):
    target = REFERENCES.get(column)
    return target is not None and value is not None and value not in recovered.get(target, set())

# --- sweeps ----------------------------------------------------------------------------------

class Truth:
    """The original's rows and where their cells lie, computed once; truth of any damaged copy."""
    def __init__(self, original):
        self.pages = Pages(original)
        db = lenient(sqlite3.connect(f"file:{original}?immutable=1", uri=True))
        self.cells, self.rows, self.alias, self.stored = {}, {}, {}, {}
        for name, root, sql in db.execute("SELECT name, rootpage, sql FROM sqlite_master WHERE type = 'table' AND rootpage > 0"):
            if name.startswith("sqlite_"):
                continue
            self.cells[name] = cells_of_table(self.pages, root)
            self.rows[name] = {row[0]: row[1:] for row in db.execute(f'SELECT rowid, * FROM "{name}"')}
            info = db.execute(f'PRAGMA table_info("{name}")').fetchall()
            pk = [c for c in info if c[5] > 0]
            self.alias[name] = info.index(pk[0]) if len(pk) == 1 and pk[0][2].upper() == "INTEGER" else None

    def of(self, damaged):
        d = open(damaged, "rb").read()
        ps = self.pages.ps
        def intact(n):
            chunk = d[(n - 1) * ps:n * ps]
            return len(chunk) == ps and chunk == self.pages.page(n)
        return {name: [rowid for rowid, leaf, overflow in cells if intact(leaf) and all(intact(x) for x in overflow)]
                for name, cells in self.cells.items()}

def same_as_stored(have, want):
    """Equal, allowing an integral REAL stored (and read back, without its affinity) as an integer."""
    if len(have) < len(want):
        return False
    for a, b in zip(have, want):
        if a == b and type(a) is type(b):
            continue
        if isinstance(a, int) and isinstance(b, float) and float(a) == b:
            continue
        return False
    return True

def found_anywhere(truth, damaged, output):
    """(truth rows, rows found): each row in its table, in any table under its rowid, or in lost_and_found."""
    r = lenient(sqlite3.connect(f"file:{output}?immutable=1", uri=True))
    tables, lost = {}, {}
    for (name,) in r.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        rows = r.execute(f'SELECT rowid, * FROM "{name}"').fetchall()
        if name.startswith("lost_and_found_"):
            for row in rows:
                lost.setdefault(row[3], []).append(row[4:])
        elif not name.startswith("deleted_and_found_"):
            tables[name] = {row[0]: row[1:] for row in rows}
    wanted = found = misplaced = 0
    # A row in a table named like an original one, that is not that table's row but another's
    # (same rowid, same values): put in the wrong table.
    for name, rows in tables.items():
        if name not in truth.rows:
            continue  # a table under a name a damaged schema row gave it: its rows are its own
        for rowid, values in rows.items():
            if rowid in truth.rows[name]:
                continue
            for other, original in truth.rows.items():
                want = original.get(rowid)
                if other != name and want is not None and len(values) >= len(want) and same_as_stored(values, want):
                    misplaced += 1
                    break
    for name, rowids in truth.of(damaged).items():
        for rowid in rowids:
            wanted += 1
            want = truth.rows[name][rowid]
            record = want if truth.alias[name] is None else want[:truth.alias[name]] + (None,) + want[truth.alias[name] + 1:]
            candidates = [t.get(rowid) for t in tables.values()] + lost.get(rowid, [])
            if any(c is not None and (same_as_stored(c, want) or same_as_stored(c, record)) for c in candidates):
                found += 1
    return wanted, found, misplaced

def sweep(original, binary, kinds):
    truth = Truth(original)
    size = len(truth.pages.data)
    ps = truth.pages.ps
    work = os.path.join(os.path.dirname(os.path.abspath(original)), "sweep")
    os.makedirs(work, exist_ok=True)
    variants = []
    for kind in kinds:
        if kind == "truncations":
            variants += [f"cut:{n}" for n in range(ps, size, ps)]
        elif kind == "zeroed":
            variants += [f"zero:{p}" for p in range(1, size // ps + 1)]
        elif kind == "page1":
            variants += [f"flip:{o}" for o in range(ps)]
        elif kind == "bytes":
            variants += [f"bytes:{seed}" for seed in range(100)]
    summary = dict(runs=0, salvaged=0, refused=0, failures=0, inputChanged=0, truth=0, found=0, misplaced=0, examples=[])
    for variant in variants:
        damaged = os.path.join(work, "damaged.sqlite")
        output = os.path.join(work, "out.sqlite")
        for path in (output,):
            if os.path.exists(path):
                os.remove(path)
        if variant.startswith("bytes:"):
            data = bytearray(truth.pages.data)
            rng = random.Random(int(variant[6:]))
            for offset in rng.sample(range(size), 50):
                data[offset] = (data[offset] + rng.randint(1, 255)) % 256
            open(damaged, "wb").write(bytes(data))
        else:
            damage(original, damaged, variant, 0)
        before = open(damaged, "rb").read()
        status = subprocess.run([binary, "salvage", damaged, "--out", output], capture_output=True).returncode
        summary["runs"] += 1
        if open(damaged, "rb").read() != before or os.path.exists(damaged + "-wal") or os.path.exists(damaged + "-shm"):
            summary["inputChanged"] += 1
        if status == 65:
            summary["refused"] += 1
            continue
        if status != 0:
            summary["failures"] += 1
            summary["examples"].append(f"{variant}: exit {status}")
            continue
        summary["salvaged"] += 1
        wanted, found, misplaced = found_anywhere(truth, damaged, output)
        summary["truth"] += wanted
        summary["found"] += found
        summary["misplaced"] += misplaced
        if found < wanted or misplaced:
            summary["failures"] += 1
            if len(summary["examples"]) < 5:
                summary["examples"].append(f"{variant}: {found} of {wanted} rows on intact pages, {misplaced} in another table")
    print(json.dumps(summary))

if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "fill":
        fill(args[0], int(args[1]))
    elif command == "damage":
        damage(*args)
    elif command == "anchor-select":
        anchor_select(*args)
    elif command == "anchor-probe":
        anchor_probe(*args)
    elif command == "anchor-recover":
        anchor_recover(*args)
    elif command == "score":
        score(args[0], args[1], args[2], "--core-data" in args)
    elif command == "sweep":
        sweep(args[0], args[1], args[2:])
    else:
        sys.exit(__doc__)
