import Foundation
import Testing
@testable import StoreRescue

/// `Writeback` only asks the kernel to start flushing: the file's bytes stay as they were.
@Suite struct WritebackTests {
    @Test func startingWritebackChangesNoByte() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("file")
        let bytes = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try bytes.write(to: URL(fileURLWithPath: path))
        #if os(Linux)
        #expect(Writeback.isAvailable, "sync_file_range is found on Linux")
        #endif
        let descriptor = open(path, O_RDWR)
        #expect(descriptor >= 0)
        Writeback.start(descriptor)
        close(descriptor)
        Writeback.start(path: path)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == bytes)
    }
}
