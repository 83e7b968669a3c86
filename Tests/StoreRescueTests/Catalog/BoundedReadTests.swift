import Foundation
import Testing
@testable import StoreRescue

/// Model, property list and catalog files are read whole only when they are regular files
/// within the limit; a FIFO is refused without blocking.
struct BoundedReadTests {
    @Test func limitsAndFileKinds() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("eleven")
        try Data("hello world".utf8).write(to: URL(fileURLWithPath: path))
        #expect(try BoundedFile.contents(of: path, limit: 11) == Data("hello world".utf8))
        #expect(throws: BoundedFile.Failure.tooLarge(size: 11, limit: 10)) { try BoundedFile.contents(of: path, limit: 10) }
        #expect(throws: BoundedFile.Failure.missing) { try BoundedFile.contents(of: directory.path("none"), limit: 10) }
        #expect(throws: BoundedFile.Failure.directory) { try BoundedFile.contents(of: directory.url.path, limit: 10) }
        #expect(mkfifo(directory.path("fifo"), 0o600) == 0)
        #expect(throws: BoundedFile.Failure.notARegularFile) { try BoundedFile.contents(of: directory.path("fifo"), limit: 10) }
        #expect(BoundedFile.Failure.tooLarge(size: 11, limit: 10).description == "is 11 bytes, over the 10-byte limit")
    }

    @Test func aFIFOInPlaceOfAModelFileIsNamed() throws {
        let directory = try TemporaryDirectory()
        let version = directory.path("App.xcdatamodel")
        try FileManager.default.createDirectory(atPath: version, withIntermediateDirectories: true)
        #expect(mkfifo(version + "/contents", 0o600) == 0)
        let error = #expect(throws: XCDataModelError.self) { try XCDataModelReader.readVersion(at: version) }
        #expect(error?.description == "\(version)/contents: is not a regular file (FIFO, socket or device)")
        #expect(mkfifo(directory.path("catalog.json"), 0o600) == 0)
        let catalog = #expect(throws: CatalogFileError.self) { try CatalogFile.read(path: directory.path("catalog.json")) }
        #expect(catalog?.description == "\(directory.path("catalog.json")): is not a regular file (FIFO, socket or device)")
        #expect(catalog?.exitStatus == .notAStore)
    }
}
