import Foundation
import Testing
@testable import StoreRescue

/// SQLite writes one `quick_check` finding over several lines (`*** in database main ***`, then
/// each problem). Since values became one line each (review rv10), `inspect --deep` printed them
/// as one line joined by `\u{A}` (review rv11); each is its own line again, still escaped inside.
@Suite struct IntegrityMessageLinesTests {
    @Test func aMultiLineFindingIsALineEach() throws {
        let dir = try TemporaryDirectory()
        let store = dir.path("Journal.sqlite")
        try FileManager.default.copyItem(atPath: CatalogTestSupport.projectSample("Journal/Journal.sqlite"), toPath: store)
        var report = StoreInspector.inspect(path: store, options: InspectOptions())
        report.integrity = .init(check: "quick_check", ok: false, messages: [
            "*** in database main ***\nMultiple uses for byte 4080 of page 5\nFragmentation of 16 bytes reported as 0 on page 5",
            "row 3 missing from index \u{1B}[31mZ",
        ])
        let lines = report.renderText().components(separatedBy: "\n")
        #expect(lines.contains("  *** in database main ***"), "\(lines)")
        #expect(lines.contains("  Multiple uses for byte 4080 of page 5"))
        #expect(lines.contains("  Fragmentation of 16 bytes reported as 0 on page 5"))
        #expect(lines.contains("  row 3 missing from index \\u{1B}[31mZ"), "other control characters stay escaped")
    }
}
