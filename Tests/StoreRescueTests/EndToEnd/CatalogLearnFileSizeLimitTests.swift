import Foundation
import Testing
@testable import StoreRescue

/// `catalog learn` under a file-size limit (review rv10, `ulimit -f 10`): exit 74 as before, but
/// with the advice for a write cut short (free space, raise `ulimit -f`), not "check that the
/// catalog's folder exists … not a symbolic link", which sent the operator to the wrong place.
@Suite struct CatalogLearnFileSizeLimitTests {
    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func aFileSizeLimitIsExit74WithTheFreeSpaceHint() throws {
        let directory = try TemporaryDirectory()
        let store = try directory.copySample("stores/coredata_CartKit_CartStorage_v1.sqlite")
        let catalog = directory.path("cat.json")
        let result = try CommandRunner.run(program: "/bin/sh", [
            // `env` gives the command SIGXFSZ's default, as a shell would (the test process ignores it).
            "-c", "ulimit -f 1 && exec env --default-signal=XFSZ \"$@\"", "sh", CommandRunner.executable.path,
            "catalog", "learn", store, "--catalog", catalog, "--name", "V1", "--app", "Cart",
        ])
        #expect(result.status == 74, "\(result.status) \(result.stderr)")
        #expect(result.stderr == "Error: \(catalog): cannot write the catalog: cannot write: File too large\n"
            + "Try: free disk space in the catalog's folder or raise the file-size limit (ulimit -f), then run the command again\n", "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: catalog))
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.url.path).allSatisfy { !$0.contains(TemporaryItems.marker) })
    }
}
