import Foundation

/// A directory only this process can enter (mode 0700, created with `mkdtemp`), removed with
/// everything in it when the value is deinitialised or `remove()` is called.
public final class PrivateTemporaryDirectory {
    public let path: String
    private var isRemoved = false

    /// Creates the directory under `parent` (default: `$TMPDIR` or `/tmp`).
    public init(parent: String? = nil, prefix: String = "storerescue") throws {
        let base = parent ?? ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array((base.hasSuffix("/") ? base : base + "/").utf8CString.dropLast())
        template += Array("\(prefix)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let result = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: result)
        }
        guard let created else {
            throw CocoaError(.fileWriteUnknown, userInfo: [
                NSFilePathErrorKey: base,
                NSLocalizedDescriptionKey: "cannot create a private temporary directory in \(base): \(String(cString: strerror(errno)))",
            ])
        }
        path = created
    }

    deinit {
        remove()
    }

    /// The path of `name` inside this directory.
    public func path(_ name: String) -> String { path + "/" + name }

    /// Removes the directory and its contents now.
    public func remove() {
        guard !isRemoved else { return }
        isRemoved = true
        try? FileManager.default.removeItem(atPath: path)
    }
}
