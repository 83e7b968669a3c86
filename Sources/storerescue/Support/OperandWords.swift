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
    static func shortOptionGroup(in arguments: [String]) -> StrayOptionWord? {
        let words = arguments.prefix { $0 != "--" }
        guard let index = words.firstIndex(where: { word in
            guard word.hasPrefix("-"), !word.hasPrefix("--"), word.count > 2 else { return false }
            if singleDashHelp.contains(word) { return false }
            return Double(word) == nil
        }) else { return nil }
        // After `--reason`, the word may be meant as its value: argument-parser takes a value
        // that begins with '-' only as `--reason=-nightly` (review rv11).
        let before = index > words.startIndex ? words[index - 1] : nil
        let option = before.flatMap { $0.hasPrefix("--") && !$0.contains("=") && $0.count > 2 ? $0 : nil }
        return StrayOptionWord(word: words[index], afterOption: option)
    }
}

/// A word `OperandWords.shortOptionGroup` found: a usage error (64), with the way to give it.
struct StrayOptionWord: OperatorFacingError {
    let word: String
    /// The option just before it, which may have been meant to take it as its value.
    var afterOption: String?

    var description: String {
        "'\(word)' is not an option of storerescue (its only short option is -h)"
    }

    var recoverySuggestion: String? {
        let name = "give a file name that begins with '-' as ./\(word), or after '--' at the end of the command line; see 'storerescue --help'"
        guard let afterOption else { return name }
        return "if it is the value of \(afterOption), write \(afterOption)=\(word); " + name
    }

    var exitStatus: ExitStatus { .usage }
}
