import Crypto
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Backup file names: `<store file name>.<UTC time YYYYMMDDTHHMMSSZ>[-n].gz` and, beside it,
/// the same name ending `.manifest.json`. They sort by time within one store, and `-n` (1, 2, …)
/// tells apart backups taken in the same second.
///
/// A store name too long for that to fit in a file name (255 bytes) is cut on a character
/// boundary and followed by `~` and eight hex digits of its SHA-256 (`nameStem`): two long names
/// still give different backups, and the manifest keeps the store's whole path (retention and
/// restore go by the manifest, never by the file name).
public enum BackupNaming {
    public struct Names: Sendable, Equatable {
        public var backup: String
        public var manifest: String
    }

    /// `20250131T091500Z` for a date.
    public static func timestamp(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        return String(format: "%04d%02d%02dT%02d%02d%02dZ", c.year ?? 0, c.month ?? 0, c.day ?? 0,
                      c.hour ?? 0, c.minute ?? 0, c.second ?? 0)
    }

    /// The longest file name the file systems in use take (`NAME_MAX`).
    static let maximumNameBytes = 255
    /// What a backup name adds to the store's name at most: `.`, the timestamp, `-9999` and
    /// `.manifest.json`.
    static let addedBytes = 1 + 16 + 5 + 14

    /// The store's file name as it starts its backups' names: whole when it fits, else cut.
    public static func nameStem(_ storeFileName: String) -> String {
        let room = maximumNameBytes - addedBytes
        guard storeFileName.utf8.count > room else { return storeFileName }
        let digest = SHA256.hash(data: Data(storeFileName.utf8)).prefix(4).map { String(format: "%02x", $0) }.joined()
        return TemporaryItems.label(storeFileName, maximumBytes: room - 9) + "~" + digest
    }

    /// Whether `name` is a manifest name `freeName` gives a backup of `storeFileName`: its
    /// stem, `.`, a timestamp (`YYYYMMDDTHHMMSSZ`), an optional `-N`, `.manifest.json`. A
    /// store whose name begins with this one's (`a.sqlite.bak` for `a.sqlite`) is another
    /// store: a prefix alone took its manifests for this one's (review rv11).
    static func isManifestName(_ name: String, ofStore storeFileName: String) -> Bool {
        let bytes = Array(name.utf8), prefix = Array((nameStem(storeFileName) + ".").utf8), suffix = Array(".manifest.json".utf8)
        guard bytes.count >= prefix.count + 16 + suffix.count, bytes.starts(with: prefix), bytes.suffix(suffix.count).elementsEqual(suffix)
        else { return false }
        let middle = Array(bytes[prefix.count..<(bytes.count - suffix.count)])
        func isDigit(_ byte: UInt8) -> Bool { (48...57).contains(byte) }
        guard middle[0..<8].allSatisfy(isDigit), middle[8] == UInt8(ascii: "T"), middle[9..<15].allSatisfy(isDigit),
              middle[15] == UInt8(ascii: "Z")
        else { return false }
        let rest = middle.dropFirst(16)
        return rest.isEmpty || (rest.first == UInt8(ascii: "-") && (2...5).contains(rest.count) && rest.dropFirst().allSatisfy(isDigit))
    }

    /// The first free pair of names in `folder` for a backup of `storeFileName` taken at `date`.
    ///
    /// A name taken by a regular file moves on to the next suffix; anything else at a candidate
    /// name (a symbolic link, a folder) is refused, since it was not put there by this tool.
    ///
    /// - Throws: `SafeFileOutputError.destinationIsSymbolicLink` / `.destinationExists`.
    public static func freeName(storeFileName: String, date: Date, in folder: String) throws -> Names {
        let base = nameStem(storeFileName) + "." + timestamp(date)
        for suffix in 0..<10_000 {
            let stem = suffix == 0 ? base : base + "-\(suffix)"
            let names = Names(backup: stem + ".gz", manifest: stem + ".manifest.json")
            var isTaken = false
            for name in [names.backup, names.manifest] {
                let path = folder + "/" + name
                var status = stat()
                guard lstat(path, &status) == 0 else { continue }
                switch status.st_mode & S_IFMT {
                case S_IFREG: isTaken = true
                case S_IFLNK: throw SafeFileOutputError.destinationIsSymbolicLink(path: path)
                default: throw SafeFileOutputError.destinationExists(path: path)
                }
            }
            if !isTaken { return names }
        }
        throw SafeFileOutputError.destinationExists(path: folder + "/" + base + ".gz")
    }
}
