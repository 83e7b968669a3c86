import Foundation
import Testing
@testable import StoreRescue

/// Core Data's inferred mapping for attributes (`migration-semantics.md` §2): added, removed,
/// renamed through renaming identifiers, optional ↔ required, type changes that convert without
/// loss — and the refusals, with counts, for what does not.
@Suite struct InferredAttributeTests {
    typealias M = TestModel

    private func item(_ properties: [PropertyDescription]) -> [EntityDescription] {
        [EntityDescription(name: "Item", properties: properties)]
    }

    /// V1 with `properties`, filled with `rows`, migrated to V2 with `next`.
    private func migrate(_ first: [PropertyDescription], _ rows: [[String: SQLiteValue]], to next: [PropertyDescription])
        throws -> (MigrationFixture, MigrationReport)
    {
        let fixture = try MigrationFixture(versions: [M.version("V1", item(first)), M.version("V2", item(next))])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for row in rows { try context.insert("Item", values: row) }
        }
        return (fixture, fixture.migrate(path))
    }

    private func values(_ fixture: MigrationFixture, _ report: MigrationReport, _ attribute: String) throws -> [SQLiteValue] {
        let path = try #require(report.result?.path, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
        try fixture.expectExactLayout(path, version: "V2")
        return try fixture.objects(path, at: "V2", "Item").map { $0[attribute] ?? .null }
    }

    @Test func addedAttributesGetNullOrTheirDefaultInStorageForm() throws {
        let (fixture, report) = try migrate(
            [M.attribute("title")], [["title": .text("a")], ["title": .text("b")]],
            to: [
                M.attribute("title"), M.attribute("note"),
                M.attribute("flag", .boolean, optional: false, default: "YES"),
                M.attribute("when", .date, default: "2001-01-02T00:00:00Z"),
                M.attribute("token", .uuid, default: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"),
                M.attribute("price", .decimal, default: "1.5"),
                M.attribute("count", .integer32, optional: false, default: "7"),
                M.attribute("label", .string, optional: false, default: "none"),
            ])
        #expect(report.status == .migrated)
        #expect(try values(fixture, report, "note") == [.null, .null])
        #expect(try values(fixture, report, "flag") == [.integer(1), .integer(1)])
        let when = try values(fixture, report, "when")
        // Seconds since 2001; a whole number of seconds is stored as an integer by the column's
        // NUMERIC affinity (TIMESTAMP), as it is in stores Core Data writes.
        #expect(when == [.integer(86_400), .integer(86_400)], "\(when)")
        let token = StorageValue.uuidBytes(try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")))
        #expect(try values(fixture, report, "token") == [.blob(token), .blob(token)])
        #expect(try values(fixture, report, "price") == [.real(1.5), .real(1.5)])
        #expect(try values(fixture, report, "count") == [.integer(7), .integer(7)])
        #expect(try values(fixture, report, "label") == [.text("none"), .text("none")])
    }

    /// A Float default with no exact Float form (`0.1`, `16777217`) is what Core Data reads it
    /// as, a Float: valid, and stored as that Float. A review's valid model was refused ("not a
    /// Float"), and `upgrade --on-failure clean` then set the store aside for an empty one.
    @Test func aFloatDefaultIsReadAsAFloat() throws {
        let (fixture, report) = try migrate(
            [M.attribute("title")], [["title": .text("a")]],
            to: [
                M.attribute("title"),
                M.attribute("rating", .float, optional: false, default: "0.1"),
                M.attribute("large", .float, default: "16777217"),
            ])
        #expect(report.status == .migrated, "\(report.refusals.map(\.message))")
        #expect(try values(fixture, report, "rating") == [.real(Double(Float(0.1)))])
        #expect(try values(fixture, report, "large") == [.real(16_777_216)], "the Float 16777217 reads as")
        let tooLarge = AttributeDescription(name: "huge", type: .float, isOptional: false, defaultValue: "1e39")
        #expect(throws: StorageValue.Failure.self) { try StorageValue.defaultValue(of: tooLarge) }
    }

    @Test func removedAttributesAreCountedAsDiscarded() throws {
        let (_, report) = try migrate(
            [M.attribute("title"), M.attribute("old")], [["title": .text("a"), "old": .text("x")], ["title": .text("b")]],
            to: [M.attribute("title")])
        #expect(report.status == .migrated)
        #expect(report.hops.first?.discardedValues.map { "\($0.name)=\($0.count)" } == ["Item.old=1"])
        #expect(report.hops.first?.entities.first?.removedAttributes == ["old"])
    }

    @Test func renamingIdentifiersAreCanonicalAcrossVersions() throws {
        // a → b (renaming identifier a) → c (renaming identifier a): V1 → V3 in one hop maps a to c.
        let fixture = try MigrationFixture(versions: [
            M.version("V1", item([M.attribute("a")])),
            M.version("V2", item([M.attribute("b", renamedFrom: "a")])),
            M.version("V3", item([M.attribute("c", renamedFrom: "a")])),
        ])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { try $0.insert("Item", values: ["a": .text("kept")]) }
        for from in ["V1", "V2"] {
            var source = path
            if from == "V2" {
                let step = fixture.migrate(path, to: "V2", output: "v2.sqlite")
                source = try #require(step.result?.path)
                #expect(try fixture.objects(source, at: "V2", "Item").first?["b"] == .text("kept"))
            }
            let report = fixture.migrate(source, output: "from-\(from).sqlite")
            let output = try #require(report.result?.path)
            #expect(try fixture.objects(output, at: "V3", "Item").first?["c"] == .text("kept"), "from \(from)")
            #expect(report.hops.first?.entities.first?.attributes.first?.change.hasPrefix("renamed from") == true)
        }
    }

    @Test func optionalBecomingRequiredTakesTheDefaultForNulls() throws {
        let (fixture, report) = try migrate(
            [M.attribute("title")], [["title": .text("a")], [:]],
            to: [M.attribute("title", optional: false, default: "untitled")])
        #expect(try values(fixture, report, "title") == [.text("a"), .text("untitled")])
        #expect(report.hops.first?.entities.first?.attributes.first?.change == "now required")
    }

    @Test func optionalBecomingRequiredWithoutDefaultIsRefusedOnlyWhenNullsExist() throws {
        let (_, refused) = try migrate([M.attribute("title")], [["title": .text("a")], [:], [:]], to: [M.attribute("title", optional: false)])
        #expect(refused.status == .refused)
        let refusal = try #require(refused.refusals.first)
        #expect(refusal.code == .mandatoryValueMissing && refusal.rowCount == 2 && refusal.coreDataErrorCode == 134110)
        #expect(refusal.message.contains("2 Item rows have no value"))
        let (fixture, fine) = try migrate([M.attribute("title")], [["title": .text("a")]], to: [M.attribute("title", optional: false)])
        #expect(try values(fixture, fine, "title") == [.text("a")])
    }

    @Test func aNewRequiredAttributeWithoutDefaultIsRefusedWhenRowsExist() throws {
        let (_, refused) = try migrate([M.attribute("title")], [[:], [:]], to: [M.attribute("title"), M.attribute("size", .integer64, optional: false)])
        #expect(refused.refusals.map { "\($0.entity ?? "").\($0.property ?? "") \($0.rowCount ?? 0)" } == ["Item.size 2"])
        let (_, empty) = try migrate([M.attribute("title")], [], to: [M.attribute("title"), M.attribute("size", .integer64, optional: false)])
        #expect(empty.status == .migrated, "no rows: nothing lacks the value")
    }

    @Test func typeChangesConvertWhenEveryValueFits() throws {
        let (widened, widenedReport) = try migrate([M.attribute("n", .integer16)], [["n": .integer(-5)]], to: [M.attribute("n", .integer64)])
        #expect(try values(widened, widenedReport, "n") == [.integer(-5)])
        let (narrowed, narrowedReport) = try migrate([M.attribute("n", .integer64)], [["n": .integer(300)]], to: [M.attribute("n", .integer16)])
        #expect(try values(narrowed, narrowedReport, "n") == [.integer(300)])
        let (texted, textedReport) = try migrate([M.attribute("n", .integer32)], [["n": .integer(42)]], to: [M.attribute("n", .string)])
        #expect(try values(texted, textedReport, "n") == [.text("42")])
        let (parsed, parsedReport) = try migrate([M.attribute("n", .string)], [["n": .text(" 17 ")]], to: [M.attribute("n", .integer32)])
        #expect(try values(parsed, parsedReport, "n") == [.integer(17)])
    }

    @Test func typeChangesThatLoseValuesAreRefusedNamingAValue() throws {
        let (_, report) = try migrate([M.attribute("n", .integer64)], [["n": .integer(1)], ["n": .integer(70_000)]], to: [M.attribute("n", .integer16)])
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .typeChangeNotInferable && refusal.rowCount == 1 && refusal.coreDataErrorCode == 134140)
        #expect(refusal.message.contains("the integer 70000 in the object with Z_PK 2"))
        let (_, impossible) = try migrate([M.attribute("blob", .binaryData)], [[:]], to: [M.attribute("blob", .integer64)])
        #expect(impossible.refusals.first?.code == .typeChangeNotInferable)
        #expect(impossible.refusals.first?.message.contains("changes type from Binary to Integer 64") == true)
    }

    /// Text that SQLite cannot keep as a number (`nan`: a NaN is stored as NULL) or that a
    /// Double cannot hold (more than 15 significant digits) does not convert: a review's `nan`
    /// became NULL with exit 0 and nothing reported. Trailing zeros and infinities convert.
    @Test func textThatWouldLoseItsNumberDoesNotConvert() throws {
        for (type, text) in [(AttributeType.double, "nan"), (.decimal, "NaN"), (.float, "nan"), (.decimal, "12345678901234567890.123"),
                             (.double, "0.12345678901234567")] {
            let (_, report) = try migrate([M.attribute("n", .string)], [["n": .text("1")], ["n": .text(text)]], to: [M.attribute("n", type)])
            let refusal = try #require(report.refusals.first, "\(type) \(text)")
            #expect(refusal.code == .typeChangeNotInferable && refusal.rowCount == 1, "\(type) \(text)")
            #expect(refusal.message.contains("the text \"\(text)\""))
        }
        let texts = ["100000000000000000000", "1.500000000000000000000", "-0.000123456789012345", "inf"]
        let (converted, report) = try migrate([M.attribute("n", .string)], texts.map { ["n": .text($0)] }, to: [M.attribute("n", .double)])
        #expect(try values(converted, report, "n") == [.real(1e20), .real(1.5), .real(-0.000123456789012345), .real(.infinity)])
        #expect(StorageValue.significantDigits("-0012.3400e5") == 4 && StorageValue.significantDigits("0.000") == 0)
    }

    @Test func aNewUniquenessConstraintThatObjectsBreakIsRefused() throws {
        let unique = [EntityDescription(name: "Item", properties: [M.attribute("code")], uniquenessConstraints: [["code"]])]
        let fixture = try MigrationFixture(versions: [M.version("V1", item([M.attribute("code")])), M.version("V2", unique)])
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            for code in ["a", "b", "a", "a", "c", "c"] { try context.insert("Item", values: ["code": .text(code)]) }
            try context.insert("Item", values: [:])
            try context.insert("Item", values: [:])
        }
        let report = fixture.migrate(path)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.code == .uniquenessViolated && refusal.rowCount == 2, "a and c are shared; NULLs do not count")
        #expect(refusal.message.contains("V2 makes Item.code unique, and 2 values are shared by several Item objects"))
    }
}

