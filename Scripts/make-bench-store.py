#!/usr/bin/env python3
"""Builds a Core Data-like SQLite store of at least TARGET_MB megabytes for the backup benchmark.

Tables look like what Core Data writes (Z_PK/Z_ENT/Z_OPT, Z_METADATA, Z_PRIMARYKEY, foreign-key
indexes) and hold realistic, compressible content: names, e-mail addresses, amounts, timestamps,
free text drawn from a vocabulary, and small blobs (some structured, some noisy), so the store
compresses about 3-5x, like real app data, rather than being all zeros or all noise.

usage: make-bench-store.py PATH [TARGET_MB]
"""
import itertools
import os
import random
import sqlite3
import sys
import uuid

if len(sys.argv) < 2 or len(sys.argv) > 3 or sys.argv[1] in ("-h", "--help") or sys.argv[1].startswith("-"):
    # A flag is never taken for the output path (--help used to write a store named "--help").
    print(__doc__.strip(), file=sys.stdout if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else sys.stderr)
    sys.exit(0 if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help") else 64)
path = sys.argv[1]
try:
    target = int(sys.argv[2]) if len(sys.argv) > 2 else 560
except ValueError:
    sys.exit(f"make-bench-store.py: TARGET_MB must be a whole number of megabytes, not {sys.argv[2]!r}")
if os.path.exists(path):
    sys.exit(f"make-bench-store.py: {path} exists; remove it or name another path")
rng = random.Random(20250131)

syllables = ["ka", "lo", "mi", "ne", "to", "ra", "shi", "vu", "den", "por", "tal", "gre", "bi", "zu", "qua",
             "fen", "mor", "lit", "sar", "vel"]
vocabulary = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(3000)]
vocabulary += ["the", "and", "order", "invoice", "shipped", "pending", "customer", "refund", "note", "total"] * 40
first_names = ["Anna", "Ben", "Carla", "Dmitri", "Elif", "Farah", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Lea"]
last_names = ["Smith", "Müller", "Rossi", "Nakamura", "Okafor", "Silva", "Novak", "Haddad", "Larsen", "Kim"]
cities = ["Zürich", "Lagos", "Osaka", "Porto", "Quito", "Tallinn", "Austin", "Pune", "Lyon", "Perth"]
statuses = ["new", "paid", "shipped", "delivered", "returned", "cancelled"]
# Word frequencies in real text follow Zipf's law: a few words are very common.
zipf_cumulative = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(vocabulary))))
rng.shuffle(vocabulary)


def sentence(n):
    return " ".join(rng.choices(vocabulary, cum_weights=zipf_cumulative, k=n)).capitalize() + "."


def blob():
    if rng.random() < 0.9:  # structured: a small header and a repeating pattern with noise
        pattern = bytes(rng.randrange(256) for _ in range(16))
        body = bytearray(pattern * rng.randint(20, 120))
        for _ in range(len(body) // 16):
            body[rng.randrange(len(body))] = rng.randrange(256)
        return b"SRBLOB01" + bytes(body)
    return os.urandom(rng.randint(64, 256))  # a thumbnail-like incompressible part


if os.path.exists(path):
    os.remove(path)
db = sqlite3.connect(path, isolation_level=None)
db.executescript("""
PRAGMA page_size = 4096;
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
CREATE TABLE ZCUSTOMER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCREATED TIMESTAMP,
  ZFIRSTNAME VARCHAR, ZLASTNAME VARCHAR, ZEMAIL VARCHAR, ZCITY VARCHAR, ZNOTES VARCHAR, ZAVATAR BLOB);
CREATE TABLE ZORDER (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCUSTOMER INTEGER,
  ZAMOUNT DECIMAL, ZQUANTITY INTEGER, ZDATE TIMESTAMP, ZSTATUS VARCHAR, ZCOMMENT VARCHAR, ZRECEIPT BLOB);
CREATE INDEX ZORDER_ZCUSTOMER_INDEX ON ZORDER (ZCUSTOMER);
CREATE INDEX Z_Order_byDate ON ZORDER (ZDATE COLLATE BINARY ASC);
""")
db.execute("INSERT INTO Z_METADATA VALUES (1, ?, NULL)", (str(uuid.UUID(int=rng.getrandbits(128))).upper(),))
customers = 0
orders = 0
while os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0) < target * 1_000_000:
    db.execute("BEGIN")
    rows = []
    for _ in range(5000):
        customers += 1
        first, last = rng.choice(first_names), rng.choice(last_names)
        rows.append((customers, 1, 1, round(600_000_000 + rng.random() * 1e8, 3), first, last,
                     f"{first.lower()}.{last.lower()}{customers}@example.com", rng.choice(cities),
                     sentence(rng.randint(5, 40)), blob() if rng.random() < 0.1 else None))
    db.executemany("INSERT INTO ZCUSTOMER VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    rows = []
    for _ in range(15000):
        orders += 1
        rows.append((orders, 2, 1, rng.randint(1, customers), round(rng.random() * 500, 2), rng.randint(1, 9),
                     round(700_000_000 + rng.random() * 1e8), rng.choice(statuses), sentence(rng.randint(3, 25)),
                     blob() if rng.random() < 0.05 else None))
    db.executemany("INSERT INTO ZORDER VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    db.execute("COMMIT")
db.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Customer', 0, ?), (2, 'Order', 0, ?)", (customers, orders))
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
db.close()
print(f"{path}: {os.path.getsize(path) / 1e6:.0f} MB, {customers} customers, {orders} orders")
