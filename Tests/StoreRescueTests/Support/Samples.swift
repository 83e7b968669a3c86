import Foundation
import Testing

/// Where the real stores and models written by Apple's frameworks live: `$STORERESCUE_SAMPLES`,
/// or `../shared/samples` beside the package. Tests never open them in place: they copy what they
/// need into a `TemporaryDirectory` first.
enum Samples {
    static let root: URL? = {
        if let override = ProcessInfo.processInfo.environment["STORERESCUE_SAMPLES"], !override.isEmpty {
            // A folder that is not there counts as absent: the tests that need it say so and skip.
            return FileManager.default.fileExists(atPath: override) ? URL(fileURLWithPath: override, isDirectory: true) : nil
        }
        let packageRoot = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let shared = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/samples", isDirectory: true)
        return FileManager.default.fileExists(atPath: shared.path) ? shared : nil
    }()

    /// True when the samples folder is present; tests that need it use `.enabled(if: Samples.available)`.
    static var available: Bool { root != nil }

    static func url(_ relativePath: String) -> URL {
        guard let root else { return URL(fileURLWithPath: "/nonexistent-samples/\(relativePath)") }
        return root.appendingPathComponent(relativePath)
    }

    /// Every sample store (main files, relative paths), including the lineage stores.
    static var allStores: [String] {
        guard let root else { return [] }
        var result: [String] = []
        let fm = FileManager.default
        guard let walker = fm.enumerator(at: root, includingPropertiesForKeys: nil) else { return [] }
        for case let url as URL in walker {
            let name = url.lastPathComponent
            let isStore = name.hasSuffix(".sqlite") || name.hasSuffix(".store") || name.hasSuffix(".storedata")
                || name.hasSuffix(".db")
            guard isStore else { continue }
            let relative = String(url.path.dropFirst(root.path.count + 1))
            result.append(relative)
        }
        return result.sorted()
    }

    /// The sample stores directly under `stores/` (plus the WAL sample), relative paths.
    static var plainStores: [String] { allStores.filter { $0.hasPrefix("stores/") } }
}

/// A private temporary directory removed when the value is deinitialised.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        let base = URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        url = base.appendingPathComponent("storerescue-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: url)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    /// Copies a sample store and its `-wal`/`-shm`/`-journal` into this directory; returns the copy's path.
    @discardableResult
    func copySample(_ relativePath: String, as name: String? = nil) throws -> String {
        let source = Samples.url(relativePath)
        let target = url.appendingPathComponent(name ?? source.lastPathComponent)
        let fm = FileManager.default
        try fm.copyItem(at: source, to: target)
        for suffix in ["-wal", "-shm", "-journal"] {
            let sidecar = URL(fileURLWithPath: source.path + suffix)
            if fm.fileExists(atPath: sidecar.path) {
                try fm.copyItem(at: sidecar, to: URL(fileURLWithPath: target.path + suffix))
            }
        }
        return target.path
    }

    /// Copies any sample file or folder (a model, an `.xcdatamodeld`) into this directory.
    @discardableResult
    func copySampleItem(_ relativePath: String) throws -> String {
        let source = Samples.url(relativePath)
        let target = url.appendingPathComponent(source.lastPathComponent)
        try FileManager.default.copyItem(at: source, to: target)
        return target.path
    }
}
