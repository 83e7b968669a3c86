import Foundation

/// Runs the built `storerescue` executable, as an operator or a job would.
struct CommandRunner {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        /// The child was still running at the timeout and was killed (a hang).
        var timedOut = false
        /// The signal that ended the child, when one did (`status` is then its number).
        var signal: Int32?
        /// Wall-clock seconds from start to exit.
        var seconds: Double = 0

        /// stdout parsed as a JSON object.
        func json() throws -> [String: Any] {
            let object = try JSONSerialization.jsonObject(with: Data(stdout.utf8))
            guard let dictionary = object as? [String: Any] else { throw CocoaError(.propertyListReadCorrupt) }
            return dictionary
        }
    }

    /// The executable built next to the test bundle (`swift build` / `swift test` build both), or
    /// `$STORERESCUE_EXECUTABLE` (to run the end-to-end tests against another build, e.g. the
    /// one before a fix, to see a new test fail there).
    static let executable: URL = {
        if let override = ProcessInfo.processInfo.environment["STORERESCUE_EXECUTABLE"], !override.isEmpty {
            return URL(fileURLWithPath: override)
        }
        let bundleDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        let candidates = [bundleDirectory, bundleDirectory.deletingLastPathComponent()]
        for directory in candidates {
            let url = directory.appendingPathComponent("storerescue")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        return packageRoot.appendingPathComponent(".build/debug/storerescue")
    }()

    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable.path) }

    /// Runs the tool to its end, or kills it (SIGKILL) after `timeout` seconds so that a hang
    /// fails the test instead of stalling the suite.
    static func run(_ arguments: [String], environment: [String: String]? = nil, timeout: TimeInterval = 120,
                    whileRunning: ((Process) -> Void)? = nil) throws -> Result {
        try run(program: executable.path, arguments, environment: environment, timeout: timeout, whileRunning: whileRunning)
    }

    /// Runs another program (a shell that sets limits, then runs the tool) the same way.
    static func run(program: String, _ arguments: [String], environment: [String: String]? = nil,
                    timeout: TimeInterval = 120, whileRunning: ((Process) -> Void)? = nil) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        if let environment { process.environment = environment }
        // Outputs go to files, so a large output can never block the child on a full pipe.
        let dir = try TemporaryDirectory()
        guard FileManager.default.createFile(atPath: dir.path("out"), contents: nil),
            FileManager.default.createFile(atPath: dir.path("err"), contents: nil)
        else { throw CocoaError(.fileWriteUnknown) }
        let out = try FileHandle(forWritingTo: dir.url.appendingPathComponent("out"))
        let err = try FileHandle(forWritingTo: dir.url.appendingPathComponent("err"))
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        let started = Date()
        try process.run()
        whileRunning?(process)
        var timedOut = false
        while process.isRunning {
            if Date().timeIntervalSince(started) > timeout {
                timedOut = true
                kill(process.processIdentifier, SIGKILL)
                break
            }
            usleep(10_000)
        }
        process.waitUntilExit()
        let seconds = Date().timeIntervalSince(started)
        try out.close()
        try err.close()
        let outData = try Data(contentsOf: dir.url.appendingPathComponent("out"))
        let errData = try Data(contentsOf: dir.url.appendingPathComponent("err"))
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self), timedOut: timedOut,
            signal: process.terminationReason == .uncaughtSignal ? process.terminationStatus : nil, seconds: seconds)
    }
}
