/// Why a gzip file could not be written or read back intact.
public enum GzipError: OperatorFacingError, Equatable {
    /// zlib refused to compress (a bug or exhausted memory, never the input's fault).
    case compressionFailed(detail: String)
    /// The file does not start with the gzip magic bytes `1f 8b`.
    case notGzip(path: String)
    /// The file ends before the compressed stream and its trailer do.
    case truncated(path: String, atOffset: Int64)
    /// The stored CRC-32 does not match the decompressed bytes.
    case checksumMismatch(path: String)
    /// The stored length (ISIZE) does not match the decompressed bytes.
    case lengthMismatch(path: String)
    /// The compressed stream itself is damaged.
    case damaged(path: String, atOffset: Int64, detail: String)
    /// Bytes that are not another gzip member follow the last member.
    case trailingGarbage(path: String, atOffset: Int64)
    /// The file could not be read.
    case unreadable(path: String, reason: String)

    public var description: String {
        switch self {
        case .compressionFailed(let detail):
            return "gzip compression failed: \(detail)"
        case .notGzip(let path):
            return "\(path) is not a gzip file (it does not start with 1f 8b)"
        case .truncated(let path, let offset):
            return "\(path) is truncated: the gzip stream ends early, at byte \(offset)"
        case .checksumMismatch(let path):
            return "\(path) is damaged: the gzip CRC-32 does not match the decompressed data"
        case .lengthMismatch(let path):
            return "\(path) is damaged: the gzip length field does not match the decompressed data"
        case .damaged(let path, let offset, let detail):
            return "\(path) is damaged near compressed byte \(offset): \(detail)"
        case .trailingGarbage(let path, let offset):
            return "\(path) has unexpected bytes after the gzip stream, from byte \(offset)"
        case .unreadable(let path, let reason):
            return "cannot read \(path): \(reason)"
        }
    }

    public var recoverySuggestion: String? {
        switch self {
        case .compressionFailed:
            return "run the command again; if it fails again, report a bug with the command line"
        case .unreadable:
            return "check that the file exists and that you may read it"
        default:
            return "this backup cannot be trusted: restore from another backup (list them with `ls` in the backup folder)"
        }
    }

    public var exitStatus: ExitStatus {
        switch self {
        case .compressionFailed: return .internalError
        case .unreadable: return .noInput
        default: return .checkFailed
        }
    }
}
