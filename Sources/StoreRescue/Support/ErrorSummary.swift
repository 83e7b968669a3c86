/// An error as reports and `--json` output show it: what failed (naming the file), what to try,
/// and the exit status. Every command's JSON uses this one shape: `{"message", "hint", "exitStatus"}`.
/// Message and hint are capped (`TerminalText.capped`): a hostile value echoed in an error (a
/// million-digit number, a huge name) is shortened, never printed whole.
public struct ErrorSummary: Sendable, Encodable, Equatable {
    public var message: String
    @NullEncoded public var hint: String?
    public var exitStatus: Int32

    public init(message: String, hint: String?, exitStatus: Int32) {
        self.message = TerminalText.capped(message)
        self.hint = hint.map(TerminalText.capped)
        self.exitStatus = exitStatus
    }

    /// The summary of an operator-facing error.
    public init(_ error: any OperatorFacingError) {
        self.init(message: error.description, hint: error.recoverySuggestion, exitStatus: error.exitStatus.rawValue)
    }
}
