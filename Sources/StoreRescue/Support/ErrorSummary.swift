/// An error as reports and `--json` output show it: what failed (naming the file), what to try,
/// and the exit status. Every command's JSON uses this one shape: `{"message", "hint", "exitStatus"}`.
public struct ErrorSummary: Sendable, Encodable, Equatable {
    public var message: String
    @NullEncoded public var hint: String?
    public var exitStatus: Int32

    public init(message: String, hint: String?, exitStatus: Int32) {
        self.message = message
        self.hint = hint
        self.exitStatus = exitStatus
    }

    /// The summary of an operator-facing error.
    public init(_ error: any OperatorFacingError) {
        self.init(message: error.description, hint: error.recoverySuggestion, exitStatus: error.exitStatus.rawValue)
    }
}
