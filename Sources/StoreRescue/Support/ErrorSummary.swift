/// An error as reports and `--json` output show it: what failed (naming the file), what to try,
/// and the exit status. Every command's JSON uses this one shape: `{"message", "hint", "exitStatus"}`.
public struct ErrorSummary: Sendable, Encodable, Equatable {
    public var message: String
    public var hint: String?
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

    enum CodingKeys: String, CodingKey { case message, hint, exitStatus }

    /// `hint` is written as `null` when there is none, never left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(message, forKey: .message)
        try c.encode(hint, forKey: .hint)
        try c.encode(exitStatus, forKey: .exitStatus)
    }
}
