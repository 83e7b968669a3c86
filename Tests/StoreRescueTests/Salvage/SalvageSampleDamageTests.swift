import Foundation
import Testing
@testable import StoreRescue

/// The damage sweeps of `SalvageDamageTests`, on copies of the real sample stores written by
/// Apple's frameworks: truncation at every page boundary, random pages zeroed, the bytes of page 1
/// inverted, garbage WAL frames. For each: no crash, only a documented error, the input unchanged,
/// and every row whose cell lies on an intact page recovered — in its table, under the name a
/// damaged schema row gives its table, or in `lost_and_found_<n>`.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct SalvageSampleDamageTests {
    /// A private copy of a sample store (no `-wal`: the truth is computed from the main file's
    /// pages), and its rows as SQLite reads them.
    struct Original {
        let directory: TemporaryDirectory
        let path: String
        let rows: [String: [Int64: [SQLiteValue]]]
        /// Per table, the column that is its `INTEGER PRIMARY KEY` (stored as NULL in the record).
        let rowidAlias: [String: Int]
        let size: Int

        init(sample: String) throws {
            directory = try TemporaryDirectory()
            path = try directory.copySample(sample, as: "original.sqlite")
            rows = try SalvageFixtures.rows(of: path)
            let connection = try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .immutable))
            var aliases: [String: Int] = [:]
            for table in rows.keys {
                let columns = try connection.rows("PRAGMA table_info(\(table.quotedSQLIdentifier))")
                let keys = columns.filter { ($0[5].int64 ?? 0) > 0 }
                if keys.count == 1, keys[0][2].string?.uppercased() == "INTEGER", let index = columns.firstIndex(of: keys[0]) {
                    aliases[table] = index
                }
            }
            rowidAlias = aliases
            size = try Data(contentsOf: URL(fileURLWithPath: path)).count
        }
    }

    /// Sample stores without a `-wal`, small enough to sweep page by page.
    static let smallStores: [String] = Samples.allStores.filter { sample in
        let url = Samples.url(sample)
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? .max
        return size <= 128 * 1024 && !FileManager.default.fileExists(atPath: url.path + "-wal")
    }

    /// Salvages a damaged copy of `original` (plain mode) and checks every invariant. Returns how
    /// many rows lay on intact pages (0 when salvage refused the input with a documented error).
    @discardableResult
    static func check(_ original: Original, label: String, sourceLocation: SourceLocation = #_sourceLocation,
                      damage: (String) throws -> Void) throws -> Int {
        let input = try TemporaryDirectory()
        let damaged = input.path("damaged.sqlite")
        try FileManager.default.copyItem(atPath: original.path, toPath: damaged)
        try damage(damaged)
        let before = try SalvageFixtures.snapshot(input.url.path)
        let out = try TemporaryDirectory()
        let output = out.path("salvaged.sqlite")
        do {
            try Salvager.salvage(store: damaged, into: output)
        } catch let error as SalvageError {
            #expect(error.exitStatus == .notAStore, "\(label): \(error)", sourceLocation: sourceLocation)
            #expect(try SalvageFixtures.snapshot(input.url.path) == before, "\(label): input changed", sourceLocation: sourceLocation)
            #expect(try FileManager.default.contentsOfDirectory(atPath: out.url.path).isEmpty, "\(label)", sourceLocation: sourceLocation)
            return 0
        }
        #expect(try SalvageFixtures.snapshot(input.url.path) == before, "\(label): input changed", sourceLocation: sourceLocation)
        let truth = try SalvageFixtures.intactRows(original: original.path, damaged: damaged)
        let recovered = try SalvageFixtures.rows(of: output)
        let lost = try SalvageDamageTests.lostAndFound(recovered)
        var missing: [String] = []
        for (table, rowids) in truth {
            for rowid in rowids {
                let want = try #require(original.rows[table]?[rowid])
                var record = want
                if let alias = original.rowidAlias[table] { record[alias] = .null }
                let fits = { (have: [SQLiteValue]) in
                    SalvageDamageTests.sameAsStored(have, want) || SalvageDamageTests.sameAsStored(have, record)
                }
                let inATable = recovered.contains { name, rows in
                    !name.hasPrefix("lost_and_found_") && !name.hasPrefix("deleted_and_found_") && rows[rowid].map(fits) == true
                }
                if inATable || lost[rowid]?.contains(where: { SalvageDamageTests.sameAsStored($0, record) }) == true { continue }
                missing.append("\(table) \(rowid)")
            }
        }
        #expect(missing.isEmpty, "\(label): rows on intact pages not recovered: \(missing.prefix(5))", sourceLocation: sourceLocation)
        return truth.values.reduce(0) { $0 + $1.count }
    }

    @Test(arguments: smallStores)
    func truncatedAtEveryPageBoundary(sample: String) throws {
        let original = try Original(sample: sample)
        var checked = 0
        for cut in stride(from: 4096, to: original.size, by: 4096) {
            checked += try Self.check(original, label: "\(sample) cut at \(cut)") { try SalvageFixtures.truncate($0, to: cut) }
        }
        #expect(checked > 0, "\(sample): some rows lay on intact pages")
    }

    @Test(arguments: smallStores)
    func randomPagesZeroed(sample: String) throws {
        let original = try Original(sample: sample)
        let pages = original.size / 4096
        var generator = SeededGenerator(seed: 31)
        var checked = 0
        for round in 0..<8 {
            let chosen = (0..<(1 + round % 3)).map { _ in Int.random(in: 1...pages, using: &generator) }
            checked += try Self.check(original, label: "\(sample) pages \(chosen) zeroed") { path in
                for page in chosen { try SalvageFixtures.zeroPage(page, of: path, pageSize: 4096) }
            }
        }
        #expect(checked > 0, "\(sample): some rows lay on intact pages")
    }

    /// Every byte of the header inverted in turn, then every 13th byte of the rest of page 1 (the
    /// schema's b-tree page), on a Core Data store and a SwiftData one.
    @Test(arguments: ["lineages/Employees/MWKCoreDataTests.sqlite", "stores/swiftdata_CartKitSwiftData_v1.sqlite"])
    func bytesOfPageOneFlipped(sample: String) throws {
        let original = try Original(sample: sample)
        var checked = 0
        for offset in Array(0..<100) + Array(stride(from: 100, to: 4096, by: 13)) {
            checked += try Self.check(original, label: "\(sample) byte \(offset) flipped") { try SalvageFixtures.flipByte(at: offset, of: $0) }
        }
        #expect(checked > 0, "\(sample): some rows lay on intact pages")
    }

    /// A real SwiftData `-wal`: noise frames after its real ones change nothing; bytes overwritten
    /// in it never crash salvage nor change the input.
    @Test func garbageFramesInARealWriteAheadLog() throws {
        let sample = "stores/swiftdata_ResourcesManager_wal/default.store"
        let directory = try TemporaryDirectory()
        let store = try directory.copySample(sample)
        try? FileManager.default.removeItem(atPath: store + "-shm")
        let opened = try OpenedStore(path: store, options: StoreOpenOptions(alwaysCopies: true))
        let expected = try SalvageFixtures.rows(of: opened.connection)
        let wal = try Data(contentsOf: URL(fileURLWithPath: store + "-wal"))
        var generator = SeededGenerator(seed: 17)
        for round in 0..<8 {
            var damaged = wal
            if round < 4 {
                damaged.append(Data(generator.bytes((4096 + 24) * (round + 1))))
            } else {
                for _ in 0..<(round * 8) { damaged[Int.random(in: 32..<damaged.count, using: &generator)] ^= 0xFF }
            }
            try damaged.write(to: URL(fileURLWithPath: store + "-wal"))
            let before = try SalvageFixtures.snapshot(directory.url.path)
            let output = try TemporaryDirectory()
            let report = try Salvager.salvage(store: store, into: output.path("out.sqlite"))
            #expect(try SalvageFixtures.snapshot(directory.url.path) == before, "round \(round): input changed")
            if round < 4 {
                #expect(report.writeAheadLog?.used == true)
                let recovered = try SalvageFixtures.rows(of: output.path("out.sqlite"))
                for (table, rows) in expected { #expect(recovered[table] == rows, "round \(round): \(table)") }
            }
        }
    }
}
