/// Why compressed bytes could not be read (or written).
public enum CompressionError: OperatorFacingError, Equatable, Sendable {
    /// The bytes are not a valid DEFLATE stream; `reason` is zlib's message.
    case invalidData(reason: String, consumedBytes: Int)
    /// The stream ends before its final block.
    case truncatedInput(consumedBytes: Int)
    /// Decompressing would produce more than the caller's bound.
    case outputLimitExceeded(limit: Int)
    /// A compression level outside −1…9 was asked for.
    case invalidCompressionLevel(level: Int32)
    /// zlib itself failed (out of memory, version mismatch).
    case zlibFailure(operation: String, code: Int32)

    public var description: String {
        switch self {
        case .invalidData(let reason, let consumedBytes):
            return "compressed data is damaged after \(consumedBytes) bytes: \(reason)"
        case .truncatedInput(let consumedBytes):
            return "compressed data is truncated: it ends after \(consumedBytes) bytes, before the end of the stream"
        case .outputLimitExceeded(let limit):
            return "compressed data expands past the limit of \(limit) bytes"
        case .invalidCompressionLevel(let level):
            return "compression level \(level) is not between -1 and 9"
        case .zlibFailure(let operation, let code):
            return "zlib \(operation) failed with code \(code)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .invalidData, .truncatedInput:
            return "The blob is damaged. Check the store with `sqlite3 STORE 'PRAGMA integrity_check'`; "
                + "the store's model can also be taken from the app's compiled model (.momd)."
        case .outputLimitExceeded:
            return "A real model cache inflates to a few megabytes at most; this blob is probably hostile. "
                + "Take the model from the app's compiled model (.momd) instead."
        case .invalidCompressionLevel, .zlibFailure:
            return "This is a bug in storerescue or a broken zlib installation; please report it."
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .invalidData, .truncatedInput, .outputLimitExceeded: return .notAStore
        case .invalidCompressionLevel, .zlibFailure: return .internalError
        }
    }
}
