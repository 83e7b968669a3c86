import Foundation
import StoreRescue

/// Words of a command line that argument-parser would read as a group of short options but
/// that are meant as something else: a file name beginning with `-`.
///
/// No command of this tool has a short option but `-h`, so argument-parser splits a word like
/// `-hourly.store` into `-h -o -u …` and prints the help, exiting 0: a cron job's
/// `backup -hourly.store` then "succeeded" without backing anything up (review rv10 #1). Such a
/// word is refused before parsing (exit 64) with the way to give it as a name.
enum OperandWords {
    /// Spellings of help argument-parser accepts with one dash.
    private static let singleDashHelp: Set<String> = ["-h", "-help"]

    /// The first word before any `--` that begins with one `-`, is longer than `-x`, is not a
    /// number (`-1` is a value) and is not help; nil when there is none.
    static func shortOptionGroup(in arguments: [String]) -> String? {
        arguments.prefix { $0 != "--" }.first { word in
            guard word.hasPrefix("-"), !word.hasPrefix("--"), word.count > 2 else { return false }
            if singleDashHelp.contains(word) { return false }
            return Double(word) == nil
        }
    }
}

/// A word `OperandWords.shortOptionGroup` found: a usage error (64), with the way to give it.
struct StrayOptionWord: OperatorFacingError {
    let word: String

    var description: String {
        "'\(word)' is not an option of storerescue (its only short option is -h)"
    }

    var recoverySuggestion: String? {
        "give a file name that begins with '-' as ./\(word), or after '--' at the end of the command line; see 'storerescue --help'"
    }

    var exitStatus: ExitStatus { .usage }
}
