#!/usr/bin/env python3
"""The hostile-input campaign: rebuild a corpus of hostile inputs from the shared samples and run
every command that reads input against it, checking the invariants of Docs/SECURITY.md.

    Scripts/hostile-inputs.py                      # full campaign, table by family and command
    Scripts/hostile-inputs.py --slice 40 --seed 7  # a seeded slice (what `swift test` runs)
    Scripts/hostile-inputs.py --list               # the corpus: families and case counts
    Scripts/hostile-inputs.py --only wal/frame-salt-3 --command backup --keep   # reproduce one run

Options: --bin PATH (default .build/debug/storerescue), --samples DIR (default $STORERESCUE_SAMPLES
or ../shared/samples), --work DIR (default bench-work/hostile, gitignored), --jobs N, --timeout S,
--memory-mb M, --summary-json FILE (machine-readable result), --keep (keep the work folder).

Exit status: 0 when every run kept every invariant, 1 when any finding was recorded, 2 on usage.
Adding a command is one entry in COMMANDS (see Docs/SECURITY.md).
"""
import argparse
import glob
import gzip
import hashlib
import json
import os
import plistlib
import random
import re
import resource
import shutil
import signal
import socket
import sqlite3
import stat
import struct
import subprocess
import sys
import threading
import urllib.parse
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCUMENTED_STATUSES = {0, 1, 64, 65, 66, 73, 74, 75}
TRAP_MARKERS = ["Fatal error", "Stack dump", "Current stack trace", "Segmentation fault", "Illegal instruction",
                "SIGSEGV", "SIGILL", "SIGTRAP", "SIGABRT", "Assertion failed", "Precondition failed"]


# ---------------------------------------------------------------------------------------------
# Commands: one entry per command that reads input. `takes` are the input roles it is run on;
# `argv` is its template: {input} the hostile input, {out} a fresh folder for what it writes,
# {catalog} a good catalog, {lineage_catalog} the catalog of the sample the input was made from
# (the good one when there is none), {store} a good store, {version} the case's version name,
# {copy} a private copy of the hostile input (with its folder) for commands that write in place,
# {store_copy} a private copy of the good store.
# `writes`: the command may create files (only ever in {out}); on failure {out} must hold nothing,
# on success `result` (when given) must open with `PRAGMA integrity_check` = ok. A command that
# does not write leaves {out} empty whatever happens.
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    name: str
    takes: tuple
    argv: tuple
    writes: bool = False
    # Exit statuses that are a report rather than an error (the report explains the failure on
    # stdout): `inspect --deep` of a damaged store prints kind "damaged" and exits 65; `migrate`
    # prints its plan with the refusals and exits 3 (2: already at the target). `report_key` is the
    # JSON field such a report always has.
    report_statuses: tuple = ()
    report_key: str = "kind"
    # Statuses that mean it wrote its result (else {out} must be empty).
    success_statuses: tuple = (0, 1)
    # The file whose `PRAGMA integrity_check` must be ok after a success.
    result: str = ""
    # True: always --json; None: --json on about half the runs (by the seed).
    json: object = None
    # Writes in place by design: run on {copy}; the copy must stay byte-identical or pass
    # integrity_check, and nothing but the store's own -wal, -shm or -journal may appear beside
    # it (no workspace, no temporary).
    in_place: bool = False
    # `upgrade --on-failure clean`: on exit 5 the store at the copy's path passes integrity_check
    # and `match` says exact; BACKUPS/quarantine/*/incident.json is complete and the quarantine
    # holds the original main file.
    fallback: bool = False
    # Statuses documented beyond the common ones: read from `storerescue NAME --help` ("Exit
    # status ..."), so a command documents its own; 70 never counts.
    help_statuses: bool = False
    # A command still being written: skipped, with a line saying so, when `--help` fails.
    optional: bool = False

    @property
    def verb(self):
        return self.argv[0]


COMMANDS = [
    Command("inspect", ("store",), ("inspect", "{input}", "--deep", "--counts"), report_statuses=(65,)),
    Command("match", ("store",), ("match", "{input}", "--catalog", "{catalog}")),
    Command("match --catalog", ("catalog", "model"), ("match", "{store}", "--catalog", "{input}")),
    Command("create --model", ("store", "model"), ("create", "--model", "{input}", "{out}/new.sqlite"), writes=True,
            result="{out}/new.sqlite"),
    Command("create --catalog", ("catalog",), ("create", "--catalog", "{input}", "--version", "{version}", "{out}/new.sqlite"), writes=True,
            result="{out}/new.sqlite"),
    Command("catalog show", ("catalog", "model", "store"), ("catalog", "show", "{input}")),
    Command("catalog learn", ("store",), ("catalog", "learn", "{input}", "--catalog", "{out}/catalog.json", "--name", "Learned",
                                           "--app", "Campaign", "--dry-run")),
    Command("backup", ("store",), ("backup", "{input}", "--to", "{out}/backups", "--timeout", "2"), writes=True),
    Command("verify", ("backup",), ("verify", "{input}")),
    Command("restore", ("backup",), ("restore", "{input}", "--to", "{out}/restored.sqlite"), writes=True,
            result="{out}/restored.sqlite"),
    Command("migrate", ("store",), ("migrate", "{input}", "--catalog", "{lineage_catalog}", "--out", "{out}/migrated.sqlite"),
            writes=True, report_statuses=(2, 3), report_key="status", success_statuses=(0,), result="{out}/migrated.sqlite",
            help_statuses=True),
    Command("migrate --dry-run", ("store",), ("migrate", "{input}", "--catalog", "{lineage_catalog}", "--dry-run"),
            report_statuses=(2, 3), report_key="status", json=True, help_statuses=True),
    Command("migrate --catalog", ("catalog", "model"), ("migrate", "{store}", "--catalog", "{input}", "--out", "{out}/migrated.sqlite"),
            writes=True, report_statuses=(2, 3), report_key="status", success_statuses=(0,), result="{out}/migrated.sqlite",
            help_statuses=True),
    Command("salvage", ("store",), ("salvage", "{input}", "--out", "{out}/salvaged.sqlite"), writes=True, success_statuses=(0,),
            result="{out}/salvaged.sqlite", help_statuses=True),
    Command("salvage --catalog", ("store",), ("salvage", "{input}", "--out", "{out}/salvaged.sqlite", "--catalog", "{lineage_catalog}"),
            writes=True, success_statuses=(0,), result="{out}/salvaged.sqlite", help_statuses=True),
    # In place by design (issue 8): on a private copy; backups (and quarantines) only in {out}.
    # 2 already current, 3 refused, 4 adopted only and 5 fell back are reports (`status`).
    Command("upgrade", ("store",), ("upgrade", "{copy}", "--catalog", "{lineage_catalog}", "--backup-dir", "{out}/backups",
                                    "--timeout", "5"),
            writes=True, json=True, in_place=True, help_statuses=True, report_statuses=(2, 3, 4, 5), report_key="status"),
    Command("upgrade --catalog", ("catalog", "model"), ("upgrade", "{store_copy}", "--catalog", "{input}", "--backup-dir",
                                                         "{out}/backups", "--timeout", "5"),
            writes=True, json=True, in_place=True, help_statuses=True, report_statuses=(2, 3, 4, 5), report_key="status"),
    Command("adopt", ("store",), ("adopt", "{copy}", "--catalog", "{lineage_catalog}", "--backup-dir", "{out}/backups",
                                  "--timeout", "5"),
            writes=True, json=True, in_place=True, help_statuses=True, report_statuses=(2, 3, 4, 5), report_key="status"),
    Command("upgrade --on-failure clean", ("store",), ("upgrade", "{copy}", "--catalog", "{lineage_catalog}", "--backup-dir",
                                                       "{out}/backups", "--on-failure", "clean", "--timeout", "5"),
            writes=True, json=True, in_place=True, help_statuses=True, report_statuses=(2, 3, 4, 5), report_key="status",
            fallback=True),
]

# The catalog of each lineage in the samples: a store made from one of its stores is migrated,
# salvaged and upgraded with it (the others with the SyncMetadata catalog, which they refuse).
LINEAGE_CATALOGS = {"lineages/SyncMetadata/": "lineages/SyncMetadata/SyncMetadata.xcdatamodeld",
                    "lineages/PostsRevised/": "lineages/PostsRevised/CoreDataMigration_Example.xcdatamodeld",
                    "lineages/Employees/": "lineages/Employees/MWKCoreDataTests.xcdatamodeld"}


@dataclass
class Case:
    family: str
    name: str
    role: str          # store, backup, catalog, model
    main: str          # the input's path inside the case folder
    version: str = "V1"
    sample: str = ""   # the sample it was made from, if any

    @property
    def key(self):
        return f"{self.family}/{self.name}"


# ---------------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------------
class Corpus:
    def __init__(self, samples, folder, seed):
        self.samples = samples
        self.folder = folder
        self.seed = seed
        self.random = random.Random(seed)
        self.cases = []

    def sample(self, relative):
        return os.path.join(self.samples, relative)

    def new_case(self, family, name, role, main, version="V1", sample=""):
        folder = os.path.join(self.folder, family, name)
        os.makedirs(folder, exist_ok=True)
        case = Case(family, name, role, main, version, sample)
        self.cases.append(case)
        return case, folder

    def copy_store(self, relative, folder, name="s.sqlite"):
        """Copies a sample store and its sidecars, writable, as `name`; returns its path."""
        source = self.sample(relative)
        target = os.path.join(folder, name)
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(source + suffix):
                shutil.copyfile(source + suffix, target + suffix)
                os.chmod(target + suffix, 0o644)
        return target

    def store_case(self, family, name, sample, edit=None, file_name="s.sqlite"):
        case, folder = self.new_case(family, name, "store", file_name, sample=sample)
        path = self.copy_store(sample, folder, file_name)
        if edit:
            edit(path)
        return case

    # ---- family: damaged SQLite pages and headers ----------------------------------------
    def sqlite_pages(self):
        stores = ["stores/plaso_ios_netusage.sqlite", "stores/swiftdata_CartKitSwiftData_v1.sqlite",
                  "stores/plaso_ios_Accounts3.sqlite", "stores/plaso_ios_RMAdminStore-Local.sqlite",
                  "lineages/PostsRevised/CoreDataMigration_Example_3.sqlite", "stores/plaso_ios_kik.sqlite"]
        for sample in stores:
            size = os.path.getsize(self.sample(sample))
            pages = max(1, size // 4096)
            tag = os.path.basename(sample).split(".")[0][-12:]

            def write_at(offset, data):
                def edit(path):
                    with open(path, "r+b") as f:
                        f.seek(offset)
                        f.write(data)
                return edit

            for page in sorted(self.random.sample(range(1, pages), min(6, pages - 1))):
                self.store_case("sqlite-pages", f"{tag}-zero-page-{page + 1}", sample, write_at(page * 4096, b"\0" * 4096))
                self.store_case("sqlite-pages", f"{tag}-random-page-{page + 1}", sample,
                                write_at(page * 4096, bytes(self.random.getrandbits(8) for _ in range(4096))))
                self.store_case("sqlite-pages", f"{tag}-btree-header-{page + 1}", sample, write_at(page * 4096, b"\xff" * 12))
            for offset in (16, 18, 19, 20, 21, 24, 28, 31, 40, 44, 48, 52, 56, 64, 92, 96):
                self.store_case("sqlite-pages", f"{tag}-header-byte-{offset}", sample,
                                write_at(offset, bytes([self.random.getrandbits(8) | 1])))
            self.store_case("sqlite-pages", f"{tag}-schema-zeroed", sample, write_at(100, b"\0" * 3996))
            for cut in (0, 17, 100, 4095, 4096 * 2 + 1, size // 2, size - 1):
                def truncate(path, cut=cut):
                    with open(path, "r+b") as f:
                        f.truncate(cut)
                self.store_case("sqlite-pages", f"{tag}-truncated-{cut}", sample, truncate)
            self.store_case("sqlite-pages", f"{tag}-appended-garbage", sample,
                            lambda path: open(path, "ab").write(self.random.randbytes(5000)))
        for name, data in (("text", b"hello, not a database\n" * 40), ("random", self.random.randbytes(8192)),
                           ("magic-only", b"SQLite format 3\0"), ("empty", b"")):
            case, folder = self.new_case("sqlite-pages", f"not-sqlite-{name}", "store", "s.sqlite")
            open(os.path.join(folder, "s.sqlite"), "wb").write(data)

    # ---- family: WAL frames, WAL headers, -shm ---------------------------------------------
    def wal(self):
        for sample in ("lineages/SyncMetadata/SyncMetadata_V3.sqlite", "stores/swiftdata_ResourcesManager_wal/default.store"):
            tag = "sync" if "Sync" in sample else "rm"
            wal_size = os.path.getsize(self.sample(sample) + "-wal")
            page_size = 4096
            frame = 24 + page_size
            frames = (wal_size - 32) // frame

            def edit_wal(offset, data):
                def edit(path):
                    with open(path + "-wal", "r+b") as f:
                        f.seek(offset)
                        f.write(data)
                return edit

            for offset, label in ((0, "magic"), (4, "version"), (8, "page-size"), (12, "checkpoint"), (16, "salt-1"),
                                  (20, "salt-2"), (24, "checksum-1"), (28, "checksum-2")):
                self.store_case("wal", f"{tag}-header-{label}", sample, edit_wal(offset, self.random.randbytes(4)))
            for index in range(min(frames, 8)):
                base = 32 + index * frame
                for offset, label in ((0, "page-number"), (4, "commit-size"), (8, "salt"), (16, "checksum"), (24, "content")):
                    self.store_case("wal", f"{tag}-frame-{index}-{label}", sample, edit_wal(base + offset, self.random.randbytes(4)))
            for cut in (0, 7, 32, 33, 32 + frame // 2, wal_size - 1):
                def cut_wal(path, cut=cut):
                    with open(path + "-wal", "r+b") as f:
                        f.truncate(cut)
                self.store_case("wal", f"{tag}-wal-truncated-{cut}", sample, cut_wal)
            self.store_case("wal", f"{tag}-wal-garbage-appended", sample, lambda p: open(p + "-wal", "ab").write(self.random.randbytes(10000)))
            self.store_case("wal", f"{tag}-shm-random", sample, lambda p: open(p + "-shm", "wb").write(self.random.randbytes(32768)))
            self.store_case("wal", f"{tag}-shm-empty", sample, lambda p: open(p + "-shm", "wb").close())
            self.store_case("wal", f"{tag}-shm-missing", sample, lambda p: os.remove(p + "-shm"))
            self.store_case("wal", f"{tag}-main-empty-wal-only", sample, lambda p: open(p, "wb").close())
            self.store_case("wal", f"{tag}-wal-of-another-store", sample,
                            lambda p: shutil.copyfile(self.sample("lineages/SyncMetadata/SyncMetadata_V3.sqlite-wal") if "Resources" in sample
                                                      else self.sample("stores/swiftdata_ResourcesManager_wal/default.store-wal"), p + "-wal"))
            self.store_case("wal", f"{tag}-hot-journal-beside-wal", sample, lambda p: open(p + "-journal", "wb").write(self.random.randbytes(4096)))

    # ---- family: hostile metadata plists (Z_PLIST) ------------------------------------------
    def metadata(self):
        base = "stores/swiftdata_CartKitSwiftData_v1.sqlite"
        connection = sqlite3.connect(f"file:{self.sample(base)}?immutable=1", uri=True)
        original = plistlib.loads(connection.execute("SELECT Z_PLIST FROM Z_METADATA").fetchone()[0])
        connection.close()

        def with_plist(blob):
            def edit(path):
                c = sqlite3.connect(path)
                c.execute("UPDATE Z_METADATA SET Z_PLIST = ?", (blob,))
                c.commit()
                c.close()
            return edit

        variants = {
            "garbage": self.random.randbytes(600), "text": b"not a plist", "null": None, "empty": b"", "bplist-header-only": b"bplist00",
            "xml-plist": plistlib.dumps(original), "array-root": plistlib.dumps([1, 2, 3], fmt=plistlib.FMT_BINARY),
            "deep-nesting": plistlib.dumps(self.nested(400), fmt=plistlib.FMT_BINARY),
            "huge-string": plistlib.dumps({"NSStoreType": "S" * 2_000_000}, fmt=plistlib.FMT_BINARY),
            "many-keys": plistlib.dumps({f"k{i}": i for i in range(60_000)}, fmt=plistlib.FMT_BINARY),
        }
        mutations = {
            "hashes-wrong-type": ("NSStoreModelVersionHashes", "not a dictionary"),
            "hashes-short-data": ("NSStoreModelVersionHashes", {k: b"\1" for k in original.get("NSStoreModelVersionHashes", {"A": 0})}),
            "hashes-many": ("NSStoreModelVersionHashes", {f"E{i}": self.random.randbytes(32) for i in range(20_000)}),
            "hashes-escape-names": ("NSStoreModelVersionHashes", {"Evil\x1b[2J\x07": self.random.randbytes(32), "\u202eRTL": self.random.randbytes(32)}),
            "framework-huge": ("NSPersistenceFrameworkVersion", 2 ** 63 - 1),
            "framework-negative": ("NSPersistenceFrameworkVersion", -5),
            "framework-string": ("NSPersistenceFrameworkVersion", "1523\x1b[31m"),
            "identifiers-mixed": ("NSStoreModelVersionIdentifiers", [1, "x", b"y", {"a": 1}]),
            "identifiers-huge": ("NSStoreModelVersionIdentifiers", ["i" * 100_000]),
            "checksum-garbage": ("NSStoreModelVersionChecksumKey", "\x1b]0;pwned\x07" * 10),
            "digest-number": ("NSStoreModelVersionHashesDigest", 42),
            "uuid-escape": ("NSStoreUUID", "\x1b[2J"),
            "store-type-number": ("NSStoreType", 3.5),
        }
        for name, (key, value) in mutations.items():
            changed = dict(original)
            changed[key] = value
            variants[name] = plistlib.dumps(changed, fmt=plistlib.FMT_BINARY)
        blob = plistlib.dumps(original, fmt=plistlib.FMT_BINARY)
        trailer = len(blob) - 32
        variants["offset-table-out-of-range"] = blob[:trailer + 24] + struct.pack(">Q", 2 ** 40)
        variants["object-count-huge"] = blob[:trailer + 8] + struct.pack(">Q", 2 ** 62) + blob[trailer + 16:]
        variants["ref-size-zero"] = blob[:trailer + 7] + b"\0" + blob[trailer + 8:]
        variants["truncated-half"] = blob[: len(blob) // 2]
        for index in range(12):
            mutated = bytearray(blob)
            for _ in range(4):
                mutated[self.random.randrange(8, len(mutated))] = self.random.getrandbits(8)
            variants[f"bit-rot-{index}"] = bytes(mutated)
        for name, value in variants.items():
            self.store_case("metadata-plist", name, base, with_plist(value))
        # Also a store whose Z_METADATA table itself is odd.
        for name, sql in (("no-metadata-row", "DELETE FROM Z_METADATA"), ("metadata-two-rows", "INSERT INTO Z_METADATA VALUES (2, 'x', NULL)"),
                          ("metadata-dropped", "DROP TABLE Z_METADATA"), ("primarykey-garbage", "UPDATE Z_PRIMARYKEY SET Z_NAME = x'1b5b324a', Z_MAX = -1"),
                          ("primarykey-cycle", "UPDATE Z_PRIMARYKEY SET Z_SUPER = Z_ENT"),
                          ("trigger-and-view", "CREATE VIEW v AS SELECT 1; CREATE TRIGGER t AFTER INSERT ON Z_METADATA BEGIN SELECT 1; END")):
            def run_sql(path, sql=sql):
                c = sqlite3.connect(path)
                c.executescript(sql)
                c.commit()
                c.close()
            self.store_case("metadata-plist", name, base, run_sql)

    @staticmethod
    def nested(depth):
        value = "leaf"
        for _ in range(depth):
            value = [value]
        return {"NSStoreModelVersionHashes": value}

    # ---- family: hostile model caches (Z_MODELCACHE) --------------------------------------
    def model_cache(self):
        base = "stores/plaso_ios_netusage.sqlite"
        connection = sqlite3.connect(f"file:{self.sample(base)}?immutable=1", uri=True)
        compressed = connection.execute("SELECT Z_CONTENT FROM Z_MODELCACHE").fetchone()[0]
        connection.close()
        archive = zlib.decompress(compressed, -15)
        model = plistlib.loads(archive)

        def deflate(data):
            compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
            return compressor.compress(data) + compressor.flush()

        def with_cache(blob):
            def edit(path):
                c = sqlite3.connect(path)
                c.execute("UPDATE Z_MODELCACHE SET Z_CONTENT = ?", (blob,))
                c.commit()
                c.close()
            return edit

        zeros = zlib.compressobj(9, zlib.DEFLATED, -15)
        bomb = b"".join(zeros.compress(b"\0" * (1 << 20)) for _ in range(300)) + zeros.flush()
        variants = {"garbage": self.random.randbytes(3000), "null": None, "text": "model", "empty": b"", "bomb-300MiB": bomb,
                    "truncated-deflate": compressed[: len(compressed) // 2], "zlib-wrapped": zlib.compress(archive),
                    "deflated-garbage": deflate(self.random.randbytes(5000)), "deflated-text": deflate(b"bplist00 not really" * 100),
                    "deflated-xml": deflate(plistlib.dumps({"$archiver": "NSKeyedArchiver", "$objects": ["$null"]}))}
        for index in range(15):
            mutated = bytearray(compressed)
            for _ in range(3):
                mutated[self.random.randrange(len(mutated))] ^= 1 << self.random.randrange(8)
            variants[f"deflate-bit-flip-{index}"] = bytes(mutated)
        for index, mutate in enumerate(self.archive_mutations()):
            changed = json.loads(json.dumps(model, default=self.uid_to_json), object_hook=self.json_to_uid)
            label = mutate(changed)
            try:
                variants[f"archive-{index}-{label}"] = deflate(plistlib.dumps(changed, fmt=plistlib.FMT_BINARY))
            except (TypeError, ValueError, OverflowError):
                continue
        for name, value in variants.items():
            self.store_case("model-cache", name, base, with_cache(value))

    @staticmethod
    def uid_to_json(value):
        if isinstance(value, plistlib.UID):
            return {"__uid__": value.data}
        if isinstance(value, bytes):
            return {"__bytes__": value.hex()}
        raise TypeError(type(value))

    @staticmethod
    def json_to_uid(value):
        if "__uid__" in value:
            return plistlib.UID(value["__uid__"])
        if "__bytes__" in value:
            return bytes.fromhex(value["__bytes__"])
        return value

    def archive_mutations(self):
        rng = self.random

        def strings(objects):
            return [i for i, o in enumerate(objects) if isinstance(o, str) and not o.startswith("$") and o[:2] != "NS"]

        def escape_names(p):
            o = p["$objects"]
            for i in strings(o)[:40]:
                o[i] = "\x1b[2J\x1b]0;pwned\x07" + o[i]
            return "escape-names"

        def huge_name(p):
            o = p["$objects"]
            o[strings(o)[0]] = "N" * 1_000_000
            return "huge-name"

        def uid_out_of_range(p):
            for o in p["$objects"]:
                if isinstance(o, dict):
                    for k, v in o.items():
                        if isinstance(v, plistlib.UID):
                            o[k] = plistlib.UID(10 ** 6)
                            return "uid-out-of-range"
            return "uid-out-of-range"

        def uid_self_cycle(p):
            o = p["$objects"]
            for i, obj in enumerate(o):
                if isinstance(obj, dict) and "NS.objects" in obj:
                    obj["NS.objects"] = [plistlib.UID(i)] * 3
                    return "self-cycle"
            return "self-cycle"

        def drop_classes(p):
            for o in p["$objects"]:
                if isinstance(o, dict):
                    o.pop("$class", None)
            return "no-classes"

        def wrong_types(p):
            for o in p["$objects"]:
                if isinstance(o, dict):
                    for k in list(o.keys())[:2]:
                        if k != "$class":
                            o[k] = rng.choice([3.5, -1, "x", [1, 2], {"a": 1}, True])
            return "wrong-types"

        def attribute_types(p):
            for o in p["$objects"]:
                if isinstance(o, dict) and "NSAttributeType" in o:
                    o["NSAttributeType"] = rng.choice([-1, 2 ** 40, 999, 0])
            return "attribute-types"

        def top_missing(p):
            p["$top"] = {}
            return "no-top"

        def super_cycle(p):
            o = p["$objects"]
            entities = [i for i, obj in enumerate(o) if isinstance(obj, dict) and "NSEntityName" in obj]
            for i in entities:
                o[i]["NSSuperentity"] = plistlib.UID(i)
            return "superentity-cycle"

        def random_uids(p):
            o = p["$objects"]
            for obj in o:
                if isinstance(obj, dict):
                    for k, v in obj.items():
                        if isinstance(v, plistlib.UID) and rng.random() < 0.2:
                            obj[k] = plistlib.UID(rng.randrange(len(o)))
            return f"random-uids-{rng.randrange(1000)}"

        return [escape_names, huge_name, uid_out_of_range, uid_self_cycle, drop_classes, wrong_types, attribute_types,
                top_missing, super_cycle] + [random_uids] * 12

    # ---- family: gzip backups, bombs and manifests ------------------------------------------
    def backups(self, binary):
        source_folder = os.path.join(self.folder, "_source")
        os.makedirs(source_folder, exist_ok=True)
        store = self.copy_store("lineages/SyncMetadata/SyncMetadata_V3.sqlite", source_folder)
        result = subprocess.run([binary, "backup", store, "--to", os.path.join(source_folder, "b"), "--json"],
                                capture_output=True, text=True, env=run_environment(source_folder))
        made = json.loads(result.stdout)
        good_gz, good_manifest = made["backup"], made["manifest"]
        gz_bytes = open(good_gz, "rb").read()
        manifest = json.load(open(good_manifest))

        def backup_case(family, name, gz=None, manifest_data=None, manifest_edit=None):
            case, folder = self.new_case(family, name, "backup", "b.gz")
            gz_path = os.path.join(folder, "b.gz")
            if gz is None:
                gz = gz_bytes
            if callable(gz):
                gz(gz_path)
            else:
                open(gz_path, "wb").write(gz)
            data = dict(manifest, backupFileName="b.gz")
            if manifest_edit:
                manifest_edit(data)
            if os.path.lexists(gz_path) and os.path.isfile(gz_path) and manifest_edit is None and manifest_data is None:
                content = open(gz_path, "rb").read()
                data["backupSize"], data["backupSHA256"] = len(content), hashlib.sha256(content).hexdigest()
            if manifest_data is not None:
                if callable(manifest_data):
                    manifest_data(os.path.join(folder, "b.manifest.json"))
                else:
                    open(os.path.join(folder, "b.manifest.json"), "wb").write(manifest_data)
            else:
                json.dump(data, open(os.path.join(folder, "b.manifest.json"), "w"))
            return case

        backup_case("gzip", "good")
        zeros = gzip.compress(b"\0" * (64 << 20), compresslevel=9)
        backup_case("gzip", "bomb-64MiB-small-manifest", zeros)
        backup_case("gzip", "bomb-64MiB-matching-manifest", zeros,
                    manifest_edit=lambda m: m.update(snapshotSize=64 << 20, pageSize=4096, pageCount=(64 << 20) // 4096,
                                                     backupSize=len(zeros), backupSHA256=hashlib.sha256(zeros).hexdigest()))
        backup_case("gzip", "two-members", gz_bytes + gz_bytes)
        backup_case("gzip", "trailing-garbage", gz_bytes + self.random.randbytes(100))
        backup_case("gzip", "trailing-zeros", gz_bytes + b"\0" * 100)
        for cut in (0, 1, 2, 10, 18, len(gz_bytes) // 2, len(gz_bytes) - 8, len(gz_bytes) - 1):
            backup_case("gzip", f"truncated-{cut}", gz_bytes[:cut])
        for offset, label in ((3, "flags"), (4, "mtime"), (9, "os"), (len(gz_bytes) - 8, "crc"), (len(gz_bytes) - 4, "isize"),
                              (20, "deflate-early"), (len(gz_bytes) // 2, "deflate-middle")):
            mutated = bytearray(gz_bytes)
            mutated[offset] ^= 0xFF
            backup_case("gzip", f"flipped-{label}", bytes(mutated))
        fextra = b"\x1f\x8b\x08\x04" + b"\0" * 6 + struct.pack("<H", 65535) + self.random.randbytes(65535) + gz_bytes[10:]
        backup_case("gzip", "fextra-64k", fextra)
        fname = b"\x1f\x8b\x08\x08" + b"\0" * 6 + b"N" * 200_000 + b"\0" + gz_bytes[10:]
        backup_case("gzip", "fname-200k", fname)
        backup_case("gzip", "not-gzip", self.random.randbytes(5000))
        backup_case("gzip", "gzip-of-garbage", gzip.compress(self.random.randbytes(50_000)))
        backup_case("gzip", "empty", b"")

        for name, edit in {
            "missing-field": lambda m: m.pop("snapshotSHA256"), "wrong-type": lambda m: m.update(snapshotSize="big"),
            "negative-sizes": lambda m: m.update(snapshotSize=-1, backupSize=-5, pageCount=-3),
            "overflow": lambda m: m.update(pageSize=2 ** 62, pageCount=2 ** 62, snapshotSize=2 ** 63 - 1),
            "page-size-zero": lambda m: m.update(pageSize=0), "format-99": lambda m: m.update(formatVersion=99),
            "format-huge": lambda m: m.update(formatVersion=10 ** 30),
            "file-name-traversal": lambda m: m.update(backupFileName="../../etc/passwd"),
            "file-name-escape": lambda m: m.update(backupFileName="\x1b[2Jb.gz\n"),
            "escape-fields": lambda m: m.update(reason="\x1b]0;pwned\x07", sourcePath="/x/\x1b[2J", toolVersion="\x9b31m"),
            "huge-reason": lambda m: m.update(reason="R" * 900_000), "sha-wrong": lambda m: m.update(snapshotSHA256="0" * 64),
            "null-fields": lambda m: m.update(pageSize=None),
        }.items():
            backup_case("manifest", name, manifest_edit=edit)
        for name, data in {"not-json": b"{not json", "array": b"[]", "empty": b"", "two-megabytes": b" " * (2 << 20) + b"{}",
                           "deep-nesting": b"[" * 100_000 + b"]" * 100_000, "invalid-utf8": b'{"reason": "\xff\xfe"}',
                           "bom": b"\xef\xbb\xbf" + json.dumps(manifest).encode()}.items():
            backup_case("manifest", f"raw-{name}", manifest_data=data)
        backup_case("manifest", "missing", manifest_data=lambda p: None)

        # Special files in place of a backup or its manifest.
        backup_case("special-files", "gz-fifo", gz=lambda p: os.mkfifo(p))
        backup_case("special-files", "gz-link-dev-zero", gz=lambda p: os.symlink("/dev/zero", p))
        backup_case("special-files", "gz-link-dev-urandom", gz=lambda p: os.symlink("/dev/urandom", p))
        backup_case("special-files", "gz-link-dev-null", gz=lambda p: os.symlink("/dev/null", p))
        backup_case("special-files", "gz-dangling-link", gz=lambda p: os.symlink("/nonexistent/storerescue", p))
        backup_case("special-files", "gz-folder", gz=lambda p: os.mkdir(p))
        backup_case("special-files", "gz-socket", gz=make_socket)
        backup_case("special-files", "manifest-fifo", manifest_data=lambda p: os.mkfifo(p))
        backup_case("special-files", "manifest-link-dev-zero", manifest_data=lambda p: os.symlink("/dev/zero", p))
        backup_case("special-files", "manifest-folder", manifest_data=lambda p: os.mkdir(p))

    # ---- family: special files as stores and sidecars ---------------------------------------
    def special_files(self):
        makers = {"fifo": os.mkfifo, "folder": os.mkdir, "link-dev-zero": lambda p: os.symlink("/dev/zero", p),
                  "link-dev-urandom": lambda p: os.symlink("/dev/urandom", p), "dangling-link": lambda p: os.symlink("/nonexistent/x", p),
                  "socket": make_socket, "link-to-self": lambda p: os.symlink(os.path.basename(p), p)}
        for name, make in makers.items():
            case, folder = self.new_case("special-files", f"store-{name}", "store", "s.sqlite")
            make(os.path.join(folder, "s.sqlite"))
        for sample, mode in (("lineages/SyncMetadata/SyncMetadata_V3.sqlite", "wal"), ("stores/plaso_ios_kik.sqlite", "rollback")):
            for suffix in ("-wal", "-shm", "-journal"):
                for name, make in makers.items():
                    if name in ("link-dev-urandom", "link-to-self"):
                        continue

                    def edit(path, suffix=suffix, make=make):
                        if os.path.lexists(path + suffix):
                            os.remove(path + suffix)
                        make(path + suffix)
                    self.store_case("special-files", f"{mode}{suffix}-{name}", sample, edit)
        case, folder = self.new_case("special-files", "store-link-to-store", "store", "link.sqlite")
        self.copy_store("stores/plaso_ios_kik.sqlite", folder, "real.sqlite")
        os.symlink("real.sqlite", os.path.join(folder, "link.sqlite"))
        for role, name in (("catalog", "catalog.json"), ("model", "m.mom")):
            for label, make in (("fifo", os.mkfifo), ("link-dev-zero", lambda p: os.symlink("/dev/zero", p)), ("folder", os.mkdir)):
                case, folder = self.new_case("special-files", f"{role}-{label}", role, name)
                make(os.path.join(folder, name))

    # ---- family: file names with control characters and of extreme length -------------------
    def names(self):
        for label, name in (("escape", "evil\x1b[2J\x1b]0;pwned\x07.sqlite"), ("newline", "two\nlines.sqlite"),
                            ("bidi", "\u202egnp.sqlite"), ("c1", "x\u009b31m.sqlite"), ("long", "n" * 240 + ".sqlite"),
                            ("dash", "-rf.sqlite"), ("spaces", "  spaced  .sqlite")):
            self.store_case("names", f"store-{label}", "stores/plaso_ios_kik.sqlite", file_name=name)
        for label, name in (("escape", "evil\x1b[2J.sqlite"), ("empty-escape", "e\x07.sqlite")):
            case, folder = self.new_case("names", f"empty-{label}", "store", name)
            open(os.path.join(folder, name), "wb").close()

    # ---- family: hostile catalogs ------------------------------------------------------------
    def catalogs(self):
        def catalog_case(name, document, version="V1", raw=None):
            case, folder = self.new_case("catalog", name, "catalog", "catalog.json", version)
            path = os.path.join(folder, "catalog.json")
            if raw is not None:
                open(path, "wb").write(raw)
            else:
                json.dump(document, open(path, "w"))
            return folder

        def version(entities, **extra):
            return {"formatVersion": 1, "app": "Campaign", "versions": [dict({"name": "V1", "entities": entities}, **extra)]}

        def chain(depth):
            return [dict({"name": f"E{i}", "attributes": [{"name": f"a{i}", "type": "String", "optional": True}]},
                         **({"parent": f"E{i - 1}"} if i else {})) for i in range(depth)]

        catalog_case("chain-100", version(chain(101)))
        catalog_case("chain-500", version(chain(500)))
        catalog_case("flat-16001", version([{"name": f"E{i}"} for i in range(16_001)]))
        catalog_case("attributes-20000", version([{"name": "E", "attributes": [{"name": f"a{i}", "type": "String", "optional": True}
                                                                               for i in range(20_000)]}]))
        catalog_case("subentities-2000", version([{"name": "Root"}] + [{"name": f"S{i}", "parent": "Root",
                                                                       "attributes": [{"name": f"s{i}", "type": "Int"}]} for i in range(2000)]))
        for reserved in ("_METADATA", "_PRIMARYKEY", "_MODELCACHE", "_modelcache"):
            catalog_case(f"reserved-{reserved.lower()}" + ("-lowercase" if reserved.islower() else ""), version([{"name": reserved, "attributes": [{"name": "a", "type": "String"}]}]))
        catalog_case("escape-names", {"formatVersion": 1, "app": "Evil\x1b[2J", "versions": [
            {"name": "V1\x07", "entities": [{"name": "Item\x1b]0;pwned\x07", "attributes": [{"name": "t\x1b[31m", "type": "String"}]}]}]},
            version="V1\x07")
        catalog_case("sql-injection-names", version([{"name": "Item\"; DROP TABLE Z_METADATA; --",
                                                      "attributes": [{"name": "x') OR 1=1 --", "type": "String"}]}]))
        catalog_case("cycle", version([{"name": "A", "parent": "B"}, {"name": "B", "parent": "A"}]))
        catalog_case("self-parent", version([{"name": "A", "parent": "A"}]))
        catalog_case("unknown-parent", version([{"name": "A", "parent": "Nope"}]))
        catalog_case("unknown-destination", version([{"name": "A", "relationships": [{"name": "r", "destination": "Z"}]}]))
        catalog_case("bad-type", version([{"name": "A", "attributes": [{"name": "a", "type": "Quaternion"}]}]))
        catalog_case("composite-stored", version([{"name": "A", "attributes": [{"name": "a", "type": "Composite"}]}]))
        catalog_case("duplicate-entities", version([{"name": "A"}, {"name": "A"}]))
        catalog_case("empty-versions", {"formatVersion": 1, "app": "Campaign", "versions": []})
        catalog_case("format-million-digits", None, raw=b'{"formatVersion": ' + b"9" * 1_000_000 + b', "app": "A", "versions": []}')
        catalog_case("format-negative", {"formatVersion": -1, "app": "A", "versions": []})
        catalog_case("format-float", {"formatVersion": 1e308, "app": "A", "versions": []})
        catalog_case("deep-arrays", None, raw=b'{"formatVersion": 1, "app": "A", "versions": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")
        catalog_case("deep-objects", None, raw=b'{"a":' * 50_000 + b"1" + b"}" * 50_000)
        catalog_case("invalid-utf8", None, raw=b'{"formatVersion": 1, "app": "\xff\xfe", "versions": []}')
        catalog_case("nul-bytes", None, raw=b'{"formatVersion": 1, "app": "A\x00B", "versions": []}')
        catalog_case("unterminated", None, raw=b'{"formatVersion": 1, "app": "A", "versions": [')
        catalog_case("huge-string", None, raw=b'{"formatVersion": 1, "app": "' + b"A" * 3_000_000 + b'", "versions": []}')
        catalog_case("over-32MiB", None, raw=b" " * (33 << 20) + b"{}")
        catalog_case("number-exponent", None, raw=b'{"formatVersion": 1e999999999, "app": "A", "versions": []}')
        catalog_case("duplicate-keys", None, raw=b'{"formatVersion": 1, "formatVersion": 2, "app": "A", "versions": []}')
        catalog_case("bom", None, raw=b"\xef\xbb\xbf" + json.dumps(version([{"name": "A"}])).encode())
        catalog_case("unknown-keys", dict(version([{"name": "A", "colour": "red"}]), extra=1))
        catalog_case("stage-loops", dict(version([{"name": "A"}]), stages=[{"from": "V1", "to": "V1", "kind": "lightweight"}]))
        for label, target in (("dev-zero", "/dev/zero"), ("fifo", "fifo"), ("folder", "."), ("missing", "nope.sqlite"),
                              ("traversal", "../../../../etc/passwd"), ("escape", "\x1b[2J.mom")):
            folder = catalog_case(f"source-{label}", {"formatVersion": 1, "app": "A", "versions": [{"name": "V1", "store": target}]})
            if label == "fifo":
                os.mkfifo(os.path.join(folder, "fifo"))
        for label, key in (("momd-dev-zero", "momd"), ("xcdatamodeld-dev-zero", "xcdatamodeld"), ("mom-dev-zero", "mom")):
            catalog_case(label, {"formatVersion": 1, "app": "A", "versions": [{"name": "V1", key: "/dev/zero"}]})
        self.stage_catalogs()

    # ---- family: hostile catalogs, continued: stages and custom steps -----------------------
    def stage_catalogs(self):
        """Catalogs whose versions are the SyncMetadata model (so the good V3 store matches and
        `migrate` reaches the plan and the custom steps) with hostile stages, maps and steps."""
        model = self.sample("lineages/SyncMetadata/SyncMetadata.xcdatamodeld")
        v2, v3, v4 = "SyncMetadata 2", "SyncMetadata 3", "SyncMetadata 4"

        def stage_case(name, stages=None, raw=None):
            case, folder = self.new_case("catalog", f"stages-{name}", "catalog", "catalog.json", v4)
            shutil.copytree(model, os.path.join(folder, "SyncMetadata.xcdatamodeld"))
            path = os.path.join(folder, "catalog.json")
            if raw is not None:
                open(path, "wb").write(raw)
            else:
                json.dump({"formatVersion": 1, "app": "Sync", "versions": [{"xcdatamodeld": "SyncMetadata.xcdatamodeld"}],
                           "stages": stages}, open(path, "w"))

        def custom(**steps):
            return [dict({"kind": "custom", "from": v3, "to": v4}, **steps)]

        def mapping(expression, attribute="state"):
            return custom(map={"SyncFeatureEntity": {attribute: expression}})

        stage_case("good-custom", mapping("upper(state)"))
        stage_case("cycle-pair", [{"kind": "lightweight", "from": v3, "to": v4}, {"kind": "lightweight", "from": v4, "to": v3}])
        stage_case("cycle-three", [{"kind": "lightweight", "from": v2, "to": v3}, {"kind": "lightweight", "from": v3, "to": v4},
                                   {"kind": "custom", "from": v4, "to": v2}])
        stage_case("backwards", [{"kind": "custom", "from": v4, "to": v3}])
        stage_case("self", [{"kind": "custom", "from": v3, "to": v3, "map": {"SyncFeatureEntity": {"state": "1"}}}])
        stage_case("list-and-pair-overlap", [{"kind": "lightweight", "versions": [v2, v3, v4]}, {"kind": "custom", "from": v3, "to": v4}])
        stage_case("unknown-from", [{"kind": "custom", "from": "V99", "to": v4}])
        stage_case("unknown-to", [{"kind": "lightweight", "from": v3, "to": "V99"}])
        stage_case("unknown-in-list", [{"kind": "lightweight", "versions": [v3, "Nope", v4]}])
        stage_case("escape-version", [{"kind": "lightweight", "from": "\x1b[2J\x1b]0;pwned\x07", "to": v4}])
        stage_case("huge-version", [{"kind": "lightweight", "from": "V" * 1_000_000, "to": v4}])
        stage_case("ten-thousand", [{"kind": "lightweight", "versions": []} for _ in range(10_000)]
                   + [{"kind": "lightweight", "from": v3, "to": v4}])
        stage_case("not-array", {"from": v3})
        stage_case("unknown-kind", [{"kind": "quantum", "from": v3, "to": v4}])
        stage_case("unknown-keys", [{"kind": "custom", "from": v3, "to": v4, "sql": "DROP TABLE Z_METADATA"}])
        stage_case("lightweight-with-map", [{"kind": "lightweight", "from": v3, "to": v4, "map": {"SyncFeatureEntity": {"state": "1"}}}])
        # Huge maps and expressions.
        stage_case("map-100k-attributes", custom(map={"SyncFeatureEntity": {f"a{i}": "1" for i in range(100_000)}}))
        stage_case("map-20k-entities", custom(map={f"E{i}": {"x": "1"} for i in range(20_000)}))
        stage_case("map-3MB-literal", mapping("'" + "x" * 3_000_000 + "'"))
        stage_case("map-deep-parentheses", mapping("(" * 100_000 + "1" + ")" * 100_000))
        stage_case("map-deep-calls", mapping("upper(" * 50_000 + "state" + ")" * 50_000))
        stage_case("map-long-sum", mapping("+".join(["1"] * 200_000)))
        stage_case("map-deep-json", mapping("json('" + "[" * 5000 + "]" * 5000 + "')"))
        # Expressions that are hostile SQL.
        for label, expression in (
                ("subquery", "(SELECT group_concat(name) FROM sqlite_master)"), ("statement-injection", "state; DROP TABLE Z_METADATA"),
                ("comment-injection", "state) --"), ("load-extension", "load_extension('/tmp/evil.so')"),
                ("readfile", "readfile('/etc/passwd')"), ("writefile", "writefile('/tmp/storerescue-pwned', 'x')"),
                ("fts3-tokenizer", "fts3_tokenizer('simple')"), ("randomblob-900MB", "randomblob(900000000)"),
                ("zeroblob-2GB", "zeroblob(2000000000)"), ("printf-2G", "printf('%.*c', 2147483647, 'x')"),
                ("concatenated-blobs", "randomblob(300000000) || randomblob(300000000)"),
                ("replace-amplifier", "replace(replace(hex(zeroblob(50000000)), '0', '0000'), '0', '0000')"),
                ("printf-literal-2G", "printf('%.2147483647c', 'x')"), ("printf-computed-format", "printf(state, 2147483647, 'x')"),
                ("like-backtracking", "replace(hex(zeroblob(20000000)), '0', 'a') LIKE '%a%a%a%a%a%a%a%a%a%a%a%b'"),
                ("parameter", "?1"), ("named-parameter", ":x"), ("qualified-name", "base.ZSYNCFEATUREENTITY.ZSTATE"),
                ("column-name", "ZSTATE"), ("unknown-property", "nope"), ("unknown-function", "evil(1)"),
                ("integer-overflow", "abs(-9223372036854775808)"), ("invalid-utf8-cast", "CAST(x'fffe41' AS TEXT)"),
                ("escape-value", "char(27) || '[2J' || char(7)"), ("raise", "raise(ABORT, 'x')"),
                ("window-function", "row_number() OVER ()"), ("aggregate", "count(*)"), ("uuid-arguments", "uuid(1, 2, 3)"),
                ("collate", "state COLLATE nocase"), ("infinity-into-string", "1e999"), ("null-into-required", None),
                ("duplicate-into-unique", "'same'")):
            attribute = "name" if label in ("null-into-required", "duplicate-into-unique") else "state"
            stage_case(f"expr-{label}", mapping(expression if expression is not None else "NULL", attribute))
        # Hostile names in maps and steps.
        stage_case("map-entity-injection", custom(map={'SyncFeatureEntity"; DROP TABLE Z_METADATA; --': {"state": "1"}}))
        stage_case("map-attribute-injection", custom(map={"SyncFeatureEntity": {'state" = 1; --': "1"}}))
        stage_case("map-reserved-entity", custom(map={"Z_METADATA": {"Z_PLIST": "x'00'"}}))
        stage_case("map-escape-names", custom(map={"Sync\x1b[2J": {"\x07": "1"}}))
        # willMigrate / didMigrate / create steps.
        stage_case("will-delete-everything", custom(willMigrate=[{"delete": "SyncFeatureEntity", "where": "1"},
                                                               {"delete": "SyncableSettingsMetadata", "where": "1"}]))
        stage_case("will-where-injection", custom(willMigrate=[{"delete": "SyncFeatureEntity", "where": "1; DROP TABLE Z_METADATA"}]))
        stage_case("will-update-blob-bomb", custom(willMigrate=[{"update": "SyncFeatureEntity", "set": {"state": "randomblob(900000000)"},
                                                               "where": "1"}]))
        stage_case("did-update-unknown", custom(didMigrate=[{"update": "Nope", "set": {"x": "1"}, "where": "1"}]))
        stage_case("did-thousands-of-steps", custom(didMigrate=[{"update": "SyncFeatureEntity", "set": {"state": "state || 'x'"},
                                                                "where": "1"}] * 5000))
        stage_case("step-unknown-keys", custom(willMigrate=[{"truncate": "SyncFeatureEntity"}]))
        stage_case("create-unknown-entity", custom(create=[{"entity": "Nope", "forEach": "SyncFeatureEntity", "set": {"x": "1"}}]))
        stage_case("create-ten-thousand", custom(create=[{"entity": "SyncableSettingsMetadata", "forEach": "SyncFeatureEntity",
                                                           "set": {"key": f"'k{i}-' || name"}} for i in range(10_000)]))
        stage_case("create-link-unknown", custom(create=[{"entity": "SyncableSettingsMetadata", "forEach": "SyncFeatureEntity",
                                                           "set": {"key": "name"}, "link": {"nope": "source"}}]))
        stage_case("create-duplicate-unique", custom(create=[{"entity": "SyncableSettingsMetadata", "forEach": "SyncFeatureEntity",
                                                               "set": {"key": "'same'"}}]))
        stage_case("steps-wrong-types", custom(willMigrate={"update": 1}, map=[1, 2], create="x", didMigrate=None))
        stage_case("raw-deep-stages", None, raw=b'{"formatVersion": 1, "app": "Sync", "versions": [{"xcdatamodeld": '
                   b'"SyncMetadata.xcdatamodeld"}], "stages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}")

    # ---- family: hostile .xcdatamodel files and compiled .mom files -------------------------
    def model_files(self):
        def xcdatamodel(name, body, raw=None, version=None):
            version_name = version or name
            case, folder = self.new_case("model-files", name, "catalog", f"{version_name}.xcdatamodel", version=version_name)
            path = os.path.join(folder, f"{version_name}.xcdatamodel")
            os.makedirs(path)
            content = raw if raw is not None else (
                '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
                '<model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0">\n' + body + "\n</model>\n").encode()
            open(os.path.join(path, "contents"), "wb").write(content)
            return path

        def entity(name, parent=None, attributes=("a",)):
            parent_attribute = f' parentEntity="{parent}"' if parent else ""
            return (f'<entity name="{name}"{parent_attribute}>' + "".join(
                f'<attribute name="{a}" optional="YES" attributeType="String"/>' for a in attributes) + "</entity>")

        xcdatamodel("chain-2000", "\n".join(entity(f"E{i}", f"E{i - 1}" if i else None, (f"a{i}",)) for i in range(2000)))
        xcdatamodel("chain-100", "\n".join(entity(f"E{i}", f"E{i - 1}" if i else None, (f"a{i}",)) for i in range(101)))
        xcdatamodel("billion-laughs", "", raw=(
            '<?xml version="1.0"?><!DOCTYPE model [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
            '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">'
            '<!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">]>'
            '<model><entity name="&f;"/></model>').encode())
        xcdatamodel("external-entity", "", raw=b'<?xml version="1.0"?><!DOCTYPE m [<!ENTITY x SYSTEM "file:///etc/passwd">]><model><entity name="&x;"/></model>')
        xcdatamodel("deep-xml", "", raw=b"<model>" + b"<a>" * 100_000 + b"</a>" * 100_000 + b"</model>")
        xcdatamodel("malformed", "", raw=b"<model><entity name='A'>")
        xcdatamodel("not-xml", "", raw=self.random.randbytes(4000))
        xcdatamodel("empty", "", raw=b"")
        xcdatamodel("escape-names", entity("Item\x1b[2J", attributes=("t\x07",)).replace("\x1b", "&#x1b;").replace("\x07", "&#x7;"))
        xcdatamodel("reserved-name", entity("_METADATA"))
        xcdatamodel("cycle", entity("A", "B") + entity("B", "A"))
        xcdatamodel("unknown-type", '<entity name="A"><attribute name="a" attributeType="Quaternion"/></entity>')
        xcdatamodel("attributes-5000", entity("E", attributes=[f"a{i}" for i in range(5000)]))
        xcdatamodel("huge-attribute", f'<entity name="{"E" * 1_000_000}"/>')
        for label, make in (("contents-fifo", os.mkfifo), ("contents-folder", os.mkdir), ("contents-dev-zero", lambda p: os.symlink("/dev/zero", p))):
            path = xcdatamodel(label, "")
            os.remove(os.path.join(path, "contents"))
            make(os.path.join(path, "contents"))
        # Compiled models.
        momd = self.sample("models/DVIA_v2.momd")
        mom = open(os.path.join(momd, "DVIA_v2.mom"), "rb").read()

        def mom_case(name, data):
            case, folder = self.new_case("model-files", f"mom-{name}", "model", "m.mom")
            open(os.path.join(folder, "m.mom"), "wb").write(data)

        mom_case("good", mom)
        mom_case("truncated", mom[: len(mom) // 2])
        mom_case("garbage", b"bplist00" + self.random.randbytes(3000))
        for index in range(10):
            mutated = bytearray(mom)
            for _ in range(3):
                mutated[self.random.randrange(8, len(mutated))] = self.random.getrandbits(8)
            mom_case(f"bit-rot-{index}", bytes(mutated))
        archive = plistlib.loads(mom)
        for index, mutate in enumerate(self.archive_mutations()[:9]):
            changed = json.loads(json.dumps(archive, default=self.uid_to_json), object_hook=self.json_to_uid)
            label = mutate(changed)
            try:
                mom_case(f"archive-{label}", plistlib.dumps(changed, fmt=plistlib.FMT_BINARY))
            except (TypeError, ValueError, OverflowError):
                continue
        for name, files in {"momd-no-version-info": {"DVIA_v2.mom": mom},
                            "momd-version-info-garbage": {"DVIA_v2.mom": mom, "VersionInfo.plist": self.random.randbytes(200)},
                            "momd-version-info-escape": {"DVIA_v2.mom": mom, "VersionInfo.plist": plistlib.dumps(
                                {"NSManagedObjectModel_CurrentVersionName": "\x1b[2J", "NSManagedObjectModel_VersionHashes": {"\x1b": {}}},
                                fmt=plistlib.FMT_BINARY)}}.items():
            case, folder = self.new_case("model-files", name, "catalog", "M.momd", version="DVIA_v2")
            os.makedirs(os.path.join(folder, "M.momd"))
            for file_name, data in files.items():
                open(os.path.join(folder, "M.momd", file_name), "wb").write(data)

    def build(self, binary, families):
        builders = {"sqlite-pages": self.sqlite_pages, "wal": self.wal, "metadata-plist": self.metadata,
                    "model-cache": self.model_cache, "gzip": lambda: self.backups(binary), "special-files": self.special_files,
                    "names": self.names, "catalog": self.catalogs, "model-files": self.model_files}
        for name, builder in builders.items():
            if families and name not in families and not (name == "gzip" and {"manifest", "special-files"} & families):
                continue
            # Each family from its own seed: a case is the same whichever families are built.
            self.random = random.Random(f"{self.seed}-{name}")
            builder()
        # Two cases of one name would share a corpus folder and a run folder (one overwriting,
        # or removing, the other's files mid-run).
        keys = [case.key for case in self.cases]
        duplicates = sorted({key for key in keys if keys.count(key) > 1})
        if duplicates:
            raise SystemExit(f"the corpus names several inputs alike: {duplicates[:5]}")
        if families:
            self.cases = [case for case in self.cases if case.family in families]
        return self.cases


# The working folder is the process's, shared by the --jobs threads: one thread's chdir into a
# copy's folder, seen by another's getcwd, once left that one in a folder since removed.
SOCKET_FOLDER_LOCK = threading.Lock()


def make_socket(path):
    # Bound by its name from inside its folder: a socket's full path is limited to 107 bytes.
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with SOCKET_FOLDER_LOCK:
        previous = os.getcwd()
        try:
            os.chdir(os.path.dirname(path))
            server.bind(os.path.basename(path))
        finally:
            os.chdir(previous)
            server.close()


# ---------------------------------------------------------------------------------------------
# Running and checking
# ---------------------------------------------------------------------------------------------
def run_environment(folder):
    tmp = os.path.join(folder, "tmp")
    os.makedirs(tmp, exist_ok=True)
    environment = dict(os.environ, TMPDIR=tmp, LC_ALL="C.UTF-8")
    environment.pop("STORERESCUE_SAMPLES", None)
    return environment


def snapshot(folder):
    """Every entry under `folder`: type, mode, size and SHA-256 of regular files (FIFOs, devices
    and links are never opened)."""
    result = {}
    for directory, folders, files in os.walk(folder, followlinks=False):
        for name in folders + files:
            path = os.path.join(directory, name)
            info = os.lstat(path)
            entry = (stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_size)
            if stat.S_ISREG(info.st_mode):
                entry += (hashlib.sha256(open(path, "rb").read()).hexdigest(),)
            elif stat.S_ISLNK(info.st_mode):
                entry += (os.readlink(path),)
            result[os.path.relpath(path, folder)] = entry
    return result


def has_raw_control(text):
    return any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in text)


@dataclass
class Outcome:
    case: str
    family: str
    command: str
    status: int
    seconds: float
    memory_mb: float
    findings: list = field(default_factory=list)
    argv: list = field(default_factory=list)
    created: list = field(default_factory=list)   # in-place commands: what appeared beside the copy


def copy_faithfully(source, target):
    """Copies a folder entry by entry as it is: regular files by content, links as links (never
    followed), FIFOs and sockets made anew, folders recursively. Nothing special is ever opened."""
    os.makedirs(target, exist_ok=True)
    for name in os.listdir(source):
        path, copy = os.path.join(source, name), os.path.join(target, name)
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(path), copy)
        elif stat.S_ISDIR(info.st_mode):
            copy_faithfully(path, copy)
        elif stat.S_ISFIFO(info.st_mode):
            os.mkfifo(copy)
        elif stat.S_ISSOCK(info.st_mode):
            make_socket(copy)
        elif stat.S_ISREG(info.st_mode):
            shutil.copyfile(path, copy)
        os.chmod(copy, stat.S_IMODE(info.st_mode), follow_symlinks=False) if not stat.S_ISLNK(info.st_mode) else None


def integrity_check(path):
    """'ok', or what is wrong. Never opens a store whose sidecars are not regular files (SQLite
    would block on a FIFO)."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        if os.path.lexists(path + suffix) and not stat.S_ISREG(os.lstat(path + suffix).st_mode):
            return f"not checked: {os.path.basename(path + suffix)!r} is not a regular file"
    if not os.path.exists(path):
        return "missing"
    try:
        connection = sqlite3.connect("file:" + urllib.parse.quote(path) + "?mode=ro", uri=True, timeout=1)
        try:
            rows = connection.execute("PRAGMA integrity_check").fetchall()
        finally:
            connection.close()
        return "ok" if rows == [("ok",)] else "; ".join(str(row[0]) for row in rows[:3])
    except sqlite3.Error as error:
        return f"does not open: {error}"


def peak_resident_kb(pid):
    """The process's peak resident memory so far (VmHWM), 0 once it has exited or where /proc lacks it.

    Not wait4's ru_maxrss: Linux carries a process's high-water mark across fork and exec, so
    every child reported this harness's own size (122 MB for a salvage that peaked at 29 MB). The
    mark only grows, so the last reading before the exit (polled every 5 ms) is the peak, short of
    what the final milliseconds added."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run_one(binary, case, command, folders, json_mode, options):
    case_folder = os.path.join(folders["corpus"], case.family, case.name)
    run_folder = os.path.join(folders["runs"], f"{case.family}--{case.name}--{command.name.replace(' ', '_')}"[:190]
                              + ("--json" if json_mode else ""))
    shutil.rmtree(run_folder, ignore_errors=True)
    out = os.path.join(run_folder, "out")
    os.makedirs(out)
    environment = run_environment(run_folder)
    copy_folder = os.path.join(run_folder, "copy")
    substitutions = {"input": os.path.join(case_folder, case.main), "out": out, "catalog": folders["catalog"],
                     "lineage_catalog": lineage_catalog(case, folders), "store": folders["store"], "version": case.version,
                     "copy": os.path.join(copy_folder, case.main), "store_copy": os.path.join(copy_folder, os.path.basename(folders["store"]))}
    if command.in_place:
        if "{copy}" in command.argv:
            copy_faithfully(case_folder, copy_folder)
        else:
            copy_faithfully(os.path.dirname(folders["store"]), copy_folder)
    argv = [binary] + [part.format(**substitutions) for part in command.argv] + (["--json"] if json_mode else [])
    if command.fallback and os.path.isfile(substitutions["copy"]) and not os.path.islink(substitutions["copy"]):
        substitutions["original_bytes"] = open(substitutions["copy"], "rb").read()
        substitutions["had_wal"] = any(os.path.lexists(substitutions["copy"] + s) for s in ("-wal", "-journal"))
    before = snapshot(case_folder)
    copy_before = snapshot(copy_folder) if command.in_place else {}
    stdout_path, stderr_path = os.path.join(run_folder, "stdout"), os.path.join(run_folder, "stderr")
    started = time.monotonic()
    with open(stdout_path, "wb") as stdout, open(stderr_path, "wb") as stderr:
        process = subprocess.Popen(argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, env=environment, cwd=run_folder)
        findings, status, usage = [], None, None
        deadline = started + options.timeout
        terminated_at = None
        high_water_kb = 0
        while status is None:
            high_water_kb = max(high_water_kb, peak_resident_kb(process.pid))
            pid, raw, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(raw)
                break
            now = time.monotonic()
            if terminated_at is None and now > deadline:
                findings.append(f"hang: still running after {options.timeout:.0f} s; sent SIGTERM")
                process.send_signal(signal.SIGTERM)
                terminated_at = now
            elif terminated_at is not None and now > terminated_at + 5:
                findings.append("SIGTERM ignored for 5 s; killed")
                process.kill()
                terminated_at = float("inf")
            time.sleep(0.005)
        process.returncode = status
    seconds = time.monotonic() - started
    memory_mb = high_water_kb / 1024
    stdout = open(stdout_path, "rb").read().decode("utf-8", "replace")
    stderr = open(stderr_path, "rb").read().decode("utf-8", "replace")
    documented = options.statuses.get(command.name, DOCUMENTED_STATUSES)

    if status < 0:
        findings.append(f"trap: killed by signal {-status}")
    for marker in TRAP_MARKERS:
        if marker in stderr or marker in stdout:
            findings.append(f"trap: output contains {marker!r}")
    if status >= 0 and status not in documented:
        findings.append(f"exit {status}" + (" (a bug in StoreRescue, or an undocumented status)" if status == 70 else " is not documented"))
    after = snapshot(case_folder)
    if after != before:
        changed = sorted(set(before) ^ set(after) | {k for k in before if after.get(k) != before[k]})
        findings.append(f"input changed or files created beside it: {changed[:5]}")
    created = []
    if command.in_place:
        copy_after = snapshot(copy_folder)
        created = sorted(set(copy_after) - set(copy_before))
        target = substitutions["copy"] if "{copy}" in command.argv else substitutions["store_copy"]
        main = os.path.relpath(target, copy_folder)
        store_set = {main + suffix for suffix in ("", "-wal", "-shm", "-journal")}
        foreign = [name for name in created if name not in store_set]
        if foreign:
            findings.append(f"created beside the store: {foreign[:5]}")
        if copy_after.get(main) != copy_before.get(main) and status >= 0:
            verdict = integrity_check(target)
            if verdict != "ok" and not verdict.startswith("not checked"):
                findings.append(f"the store it changed in place fails integrity_check: {verdict[:200]}")
    if command.fallback and status == 5:
        findings += fallback_findings(binary, target, substitutions, copy_before.get(main), environment)
    leftovers = [name for name in os.listdir(environment["TMPDIR"])]
    if leftovers:
        findings.append(f"left in $TMPDIR: {leftovers[:3]}")
    for directory, _, files in os.walk(out):
        for name in files + os.listdir(directory):
            if ".storerescue-tmp-" in name:
                findings.append(f"temporary left in the output folder: {name}")
                break
    wrote = [os.path.relpath(os.path.join(d, f), out) for d, _, fs in os.walk(out) for f in fs]
    if not command.writes and wrote:
        findings.append(f"wrote files though it writes nothing: {wrote[:3]}")
    elif command.writes and status not in command.success_statuses and wrote and not command.in_place:
        findings.append(f"failed, yet left files in its output folder: {wrote[:3]}")
    elif command.result and status in command.success_statuses and status >= 0 and not (command.json is True and "--dry-run" in argv):
        result = command.result.format(**substitutions)
        if os.path.lexists(result):
            verdict = integrity_check(result)
            if verdict != "ok":
                findings.append(f"its result {os.path.basename(result)} fails integrity_check: {verdict[:200]}")
        elif status == 0:
            findings.append(f"exit 0, yet no {os.path.basename(result)}")
    if memory_mb > options.memory_mb:
        findings.append(f"peak memory {memory_mb:.0f} MB over the {options.memory_mb} MB bound")
    # Text is for people: never a runaway amplification of the input (a 20,000-entity store may
    # list 20,000 names; one hostile value may not become a megabyte). JSON carries data exactly.
    input_bytes = sum(entry[2] for entry in before.values() if entry[0] == stat.S_IFREG)
    if not json_mode and len(stdout) + len(stderr) > 200_000 + input_bytes:
        findings.append(f"printed {len(stdout) + len(stderr)} characters of text for {input_bytes} bytes of input")
    is_report_status = status in command.report_statuses
    if json_mode:
        try:
            document = json.loads(stdout)
            if not isinstance(document, dict):
                findings.append("--json printed something other than one JSON object")
            else:
                if "staleTemporariesRemoved" not in document:
                    findings.append("--json output lacks staleTemporariesRemoved")
                error = document.get("error")
                is_report = is_report_status and error is None and document.get(command.report_key) is not None
                if (status not in (0, 1, 64) and status in documented and not is_report
                        and not (isinstance(error, dict) and error.get("exitStatus") == status)):
                    findings.append(f"--json error.exitStatus is not the exit status {status}")
                if isinstance(error, dict) and len(error.get("message", "")) > 5000:
                    findings.append("--json error message over 5,000 characters")
        except ValueError:
            if status != 64:
                findings.append("--json output is not valid JSON")
    else:
        if has_raw_control(stdout) or has_raw_control(stderr):
            findings.append("a raw control character reached the terminal")
        is_report = is_report_status and stdout and not stderr
        if status not in (0, 1, 64) and status in documented and not is_report:
            lines = stderr.splitlines()
            if not (lines and lines[0].startswith("Error: ") and len(lines) <= 2 and (len(lines) == 1 or lines[1].startswith("Try: "))):
                findings.append(f"the error is not one Error: line and one Try: line: {stderr[:200]!r}")
            elif len(lines[0]) > 5000:
                findings.append("the error line is over 5,000 characters")
    if not options.keep:
        shutil.rmtree(run_folder, ignore_errors=True)
    return Outcome(case.key, case.family, command.name, status, seconds, memory_mb, findings, argv[1:], created)


def fallback_findings(binary, store, substitutions, original, environment):
    """Exit 5 (fell back to a clean store): the clean store is sound and exactly the catalog's
    target; the quarantine's incident is complete and keeps the original main file."""
    findings = []
    verdict = integrity_check(store)
    if verdict != "ok":
        findings.append(f"fell back, yet the clean store fails integrity_check: {verdict[:200]}")
    else:
        try:
            match = subprocess.run([binary, "match", store, "--catalog", substitutions["lineage_catalog"], "--json"],
                                   capture_output=True, text=True, env=environment, stdin=subprocess.DEVNULL, timeout=60)
            outcome, said = json.loads(match.stdout).get("outcome"), f"exit {match.returncode}"
        except (OSError, ValueError, subprocess.SubprocessError) as error:
            outcome, said = None, str(error)[:100]
        if outcome != "exact":
            findings.append(f"fell back, yet match says {outcome!r} of the clean store ({said})")
    quarantines = sorted(glob.glob(os.path.join(substitutions["out"], "backups", "quarantine", "*")))
    if len(quarantines) != 1:
        return findings + [f"fell back, yet {len(quarantines)} quarantine folders"]
    try:
        state = json.load(open(os.path.join(quarantines[0], "incident.json"))).get("state")
    except (OSError, ValueError) as error:
        state = f"unreadable ({error})"
    if state != "complete":
        findings.append(f"fell back, yet incident.json's state is {state!r}")
    kept = os.path.join(quarantines[0], os.path.basename(store))
    if not os.path.isfile(kept):
        findings.append(f"fell back, yet the quarantine has no {os.path.basename(store)}")
    elif original and original[0] == stat.S_IFREG and hashlib.sha256(open(kept, "rb").read()).hexdigest() != original[3]:
        # A readable store is settled first: only its header's counters and journal mode may
        # differ, unless its -wal was folded in (then the pages differ by design).
        before, after = substitutions.get("original_bytes"), open(kept, "rb").read()
        if before is not None and not substitutions.get("had_wal") and len(before) == len(after):
            differing = [i for i in range(len(after)) if before[i] != after[i] and i not in SETTLE_HEADER_BYTES]
            if differing:
                findings.append(f"the quarantined main file differs from the original at byte {differing[0]}")
    return findings


# Header bytes settling a store may rewrite: the file format versions (journal mode), the change
# counter, the database size in pages, version-valid-for and the SQLite version number.
SETTLE_HEADER_BYTES = {18, 19} | set(range(24, 32)) | set(range(92, 100))


def lineage_catalog(case, folders):
    for prefix, catalog in LINEAGE_CATALOGS.items():
        if case.sample.startswith(prefix):
            return os.path.join(folders["fixtures"], "lineages", os.path.basename(catalog))
    return folders["catalog"]


def is_available(binary, verb):
    """`storerescue VERB --help` succeeds and is that command's help (an unknown subcommand prints
    the top-level help and exits 0)."""
    result = subprocess.run([binary, verb, "--help"], capture_output=True, text=True)
    return result.returncode == 0 and f"USAGE: storerescue {verb} " in result.stdout


def documented_statuses(binary, command):
    """The common statuses, plus those the command's own help lists after "Exit status"."""
    statuses = set(DOCUMENTED_STATUSES)
    if command.help_statuses:
        help_text = subprocess.run([binary, command.verb, "--help"], capture_output=True, text=True).stdout
        start = re.search(r"Exit\s+status", help_text)
        if start:
            text = help_text[start.start():]
            text = text[: text.find("USAGE:")] if "USAGE:" in text else text
            statuses |= {int(n) for n in re.findall(r"(?<![\w.-])(\d{1,3})(?![\w.])", text) if int(n) < 256}
    statuses.discard(70)
    return statuses


def plan(cases, commands, seed, slice_size, both_modes=False):
    runs = []
    for index, case in enumerate(cases):
        for command in commands:
            if case.role in command.takes:
                runs.append((case, command))
    rng = random.Random(seed)
    if slice_size:
        # Stratified: every family, then every command, gets its share of the slice.
        by_family = {}
        for run in runs:
            by_family.setdefault(run[0].family, []).append(run)
        chosen = []
        while len(chosen) < slice_size and any(by_family.values()):
            for family in sorted(by_family):
                if by_family[family] and len(chosen) < slice_size:
                    chosen.append(by_family[family].pop(rng.randrange(len(by_family[family]))))
        runs = chosen
    if both_modes:  # reproducing one case: text and JSON both
        return [(case, command, mode) for case, command in runs for mode in ((True,) if command.json else (False, True))]
    # JSON on about half the runs (text checks on the rest), fixed by the seed.
    return [(case, command, rng.random() < 0.5 or command.json is True) for case, command in runs]


def print_table(outcomes, cases):
    """Rows: commands; columns: families (with their inputs on the first row)."""
    families = sorted({o.family for o in outcomes} | {c.family for c in cases})
    commands = [c.name for c in COMMANDS if any(o.command == c.name for o in outcomes)] + (
        ["all"] if any(o.command == "all" for o in outcomes) else [])
    corpus = {family: sum(1 for c in cases if c.family == family) for family in families}
    widths = {family: max(len(family), 7) for family in families}
    name_width = max([len(c) for c in commands] + [18])
    header = f"{'command':<{name_width}}" + "".join(f"  {f:>{widths[f]}}" for f in families) + f"  {'runs':>6}  {'findings':>8}"
    print(header)
    print("-" * len(header))
    print(f"{'(inputs)':<{name_width}}" + "".join(f"  {corpus[f]:>{widths[f]}}" for f in families) + f"  {len(cases):>6}")
    for command in commands:
        cells = []
        for family in families:
            runs = [o for o in outcomes if o.family == family and o.command == command]
            bad = sum(1 for o in runs if o.findings)
            cell = f"{len(runs)}" + (f"/{bad}!" if bad else "") if runs else "-"
            cells.append(f"  {cell:>{widths[family]}}")
        command_runs = [o for o in outcomes if o.command == command]
        print(f"{command:<{name_width}}" + "".join(cells) + f"  {len(command_runs):>6}  {sum(1 for o in command_runs if o.findings):>8}")
    print("-" * len(header))
    print(f"{'total':<{name_width}}" + "".join(f"  {sum(1 for o in outcomes if o.family == f):>{widths[f]}}" for f in families)
          + f"  {len(outcomes):>6}  {sum(1 for o in outcomes if o.findings):>8}")
    statuses = {}
    for o in outcomes:
        statuses[o.status] = statuses.get(o.status, 0) + 1
    print("exit statuses: " + ", ".join(f"{s}: {n}" for s, n in sorted(statuses.items())))
    slowest = max(outcomes, key=lambda o: o.seconds, default=None)
    heaviest = max(outcomes, key=lambda o: o.memory_mb, default=None)
    if slowest:
        print(f"slowest run: {slowest.seconds:.2f} s ({slowest.command} on {slowest.case}); "
              f"peak memory: {heaviest.memory_mb:.0f} MB ({heaviest.command} on {heaviest.case})")
    for command, created in created_beside_copies(outcomes).items():
        print(f"{command} (in place) created beside the copy: " + (", ".join(f"{n} ({c})" for n, c in created.items()) or "nothing"))
    print("cells: runs, and /N! when N of them broke an invariant")


def created_beside_copies(outcomes):
    """For each in-place command, the names that appeared beside the copy (digits folded to N)
    and how many runs left each: what the command must document."""
    result = {}
    for outcome in outcomes:
        if any(c.name == outcome.command and c.in_place for c in COMMANDS):
            names = result.setdefault(outcome.command, {})
            for name in outcome.created:
                folded = re.sub(r"[0-9]+", "N", name)
                names[folded] = names.get(folded, 0) + 1
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.path.join(ROOT, ".build/debug/storerescue"))
    parser.add_argument("--samples", default=os.environ.get("STORERESCUE_SAMPLES") or os.path.join(os.path.dirname(ROOT), "shared/samples"))
    parser.add_argument("--work", default=os.path.join(ROOT, "bench-work/hostile"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--slice", type=int, default=0, help="run only this many (case, command) pairs, stratified by family")
    parser.add_argument("--families", default="", help="comma-separated families (default: all)")
    parser.add_argument("--command", action="append", default=[], help="only these commands (repeatable)")
    parser.add_argument("--only", default="", help="one case, FAMILY/NAME")
    parser.add_argument("--jobs", type=int, default=max(1, os.cpu_count() or 1))
    parser.add_argument("--timeout", type=float, default=30)
    parser.add_argument("--memory-mb", type=int, default=512)
    parser.add_argument("--summary-json", default="")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--keep", action="store_true")
    options = parser.parse_args()
    if not os.access(options.bin, os.X_OK):
        parser.error(f"no executable at {options.bin}: run `swift build` first or pass --bin")
    if not os.path.isdir(options.samples):
        parser.error(f"no samples at {options.samples}: pass --samples or set STORERESCUE_SAMPLES")

    work = os.path.abspath(options.work)
    shutil.rmtree(work, ignore_errors=True)
    folders = {"corpus": os.path.join(work, "corpus"), "runs": os.path.join(work, "runs"), "fixtures": os.path.join(work, "fixtures")}
    for folder in folders.values():
        os.makedirs(folder)
    families = set(filter(None, options.families.split(",")))
    if options.only:
        families = {options.only.split("/")[0]}
    built = time.monotonic()
    corpus = Corpus(options.samples, folders["corpus"], options.seed)
    cases = corpus.build(os.path.abspath(options.bin), families)
    if options.only:
        cases = [c for c in cases if c.key == options.only]
    corpus_seconds = time.monotonic() - built
    if options.list:
        for family in sorted({c.family for c in cases}):
            print(f"{family:<16}{sum(1 for c in cases if c.family == family):>5}")
        print(f"{'total':<16}{len(cases):>5}")
        return 0

    # Good inputs the commands pair a hostile one with (checked unchanged at the end).
    good_store_folder = os.path.join(folders["fixtures"], "store")
    os.makedirs(good_store_folder)
    folders["store"] = corpus.copy_store("lineages/SyncMetadata/SyncMetadata_V3.sqlite", good_store_folder)
    folders["catalog"] = os.path.join(folders["fixtures"], "SyncMetadata.xcdatamodeld")
    shutil.copytree(corpus.sample("lineages/SyncMetadata/SyncMetadata.xcdatamodeld"), folders["catalog"])
    for catalog in LINEAGE_CATALOGS.values():
        if os.path.isdir(corpus.sample(catalog)):
            shutil.copytree(corpus.sample(catalog), os.path.join(folders["fixtures"], "lineages", os.path.basename(catalog)))
    fixtures_before = snapshot(folders["fixtures"])

    binary = os.path.abspath(options.bin)
    commands, skipped = [], []
    for command in COMMANDS:
        if options.command and command.name not in options.command:
            continue
        if command.optional and not is_available(binary, command.verb):
            print(f"{command.name}: not available in this build (storerescue {command.verb} --help fails or does not describe it); "
                  "skipped", flush=True)
            skipped.append(command.name)
            continue
        commands.append(command)
    options.statuses = {command.name: documented_statuses(binary, command) for command in commands}
    runs = plan(cases, commands, options.seed, options.slice, both_modes=bool(options.only))
    started = time.monotonic()
    outcomes = []
    lock = threading.Lock()

    def work_one(run):
        outcome = run_one(binary, run[0], run[1], folders, run[2], options)
        with lock:
            outcomes.append(outcome)
            if outcome.findings:
                print(f"FINDING {outcome.command} on {outcome.case} (exit {outcome.status}): {'; '.join(outcome.findings)}", flush=True)
        return outcome

    with ThreadPoolExecutor(max_workers=options.jobs) as pool:
        list(pool.map(work_one, runs))
    if snapshot(folders["fixtures"]) != fixtures_before:
        outcomes.append(Outcome("fixtures", "fixtures", "all", 0, 0, 0, ["the good store or catalog changed"]))
    seconds = time.monotonic() - started
    print()
    print_table(outcomes, cases)
    findings = [o for o in outcomes if o.findings]
    print(f"{len(cases)} inputs (built in {corpus_seconds:.1f} s), {len(outcomes)} runs in {seconds:.1f} s, "
          f"{len(findings)} with findings (seed {options.seed}{f', slice {options.slice}' if options.slice else ''})")
    for outcome in findings:
        print(f"  reproduce: Scripts/hostile-inputs.py --seed {options.seed} --only {outcome.case} --command '{outcome.command}' --keep"
              f"   # storerescue {' '.join(outcome.argv)}")
    if options.summary_json:
        json.dump({"inputs": len(cases), "runs": len(outcomes), "seconds": seconds,
                   "families": {f: sum(1 for c in cases if c.family == f) for f in sorted({c.family for c in cases})},
                   "commands": sorted({o.command for o in outcomes}),
                   "runsByCommand": {c: sum(1 for o in outcomes if o.command == c) for c in sorted({o.command for o in outcomes})},
                   "skipped": skipped, "createdBesideCopies": created_beside_copies(outcomes),
                   "findings": [{"case": o.case, "command": o.command, "status": o.status, "findings": o.findings, "argv": o.argv}
                                for o in findings],
                   "outcomes": [{"case": o.case, "command": o.command, "status": o.status, "seconds": round(o.seconds, 2),
                                 "memoryMB": round(o.memory_mb)} for o in outcomes]}, open(options.summary_json, "w"), indent=1)
    if not options.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
