/// Text from untrusted places (file names, entity names from a model cache, values from a
/// catalog) made safe to print: control characters escaped, runaway values cut.
///
/// A file named `ESC[2J.sqlite` must not clear the operator's screen, and a `formatVersion` of a
/// million digits must not become a megabyte error message. Every text line the tool prints goes
/// through `sanitized(_:keepingLineBreaks:)` once, in the CLI's output path; every error's
/// message and hint (text and `--json`) through `capped(_:)` in `ErrorSummary`. JSON output escapes
/// control characters itself.
///
/// A report's own line breaks are kept by that last pass, so it cannot tell them from a line feed
/// inside a value (a file or table named `x\n\nFindings\n…` would print a forged section). Each
/// value is therefore made one line where it is put into a report (`oneLine(_:)`,
/// `"\(oneLine: value)"`; `TextTableWriter` does it for every line, field and cell it writes).
///
/// ```swift
/// TerminalText.sanitized("\u{1B}[2J.sqlite: is empty", keepingLineBreaks: false)  // "\u{1B}[2J.sqlite: is empty", escaped
/// TerminalText.capped(String(repeating: "9", count: 1_000_000)).count                // 545: start, "…[999488 characters left out]…", end
/// ```
public enum TerminalText {
    /// The longest run of characters without a space (a path, a name, a number) kept whole; a
    /// longer one keeps its start and end around an ellipsis. Paths are rarely over 300 characters.
    public static let maximumValueLength = 512
    /// The longest message or hint kept whole.
    public static let maximumMessageLength = 4096

    /// `text` with every long value cut (`maximumValueLength`) and, when still longer than
    /// `maximumMessageLength`, cut at that length; each cut says how much was left out.
    public static func capped(_ text: String) -> String {
        let valuesCapped = cappingValues(text)
        let scalars = Array(valuesCapped.unicodeScalars)
        guard scalars.count > maximumMessageLength else { return valuesCapped }
        var result = String.UnicodeScalarView(scalars[0..<maximumMessageLength])
        result.append(contentsOf: "…[\(scalars.count - maximumMessageLength) more characters]".unicodeScalars)
        return String(result)
    }

    /// `text` with control characters (C0, DEL, C1, line and paragraph separators, bidirectional
    /// overrides) written as `\u{…}`, and long values cut as `capped` cuts them. Line breaks are
    /// kept when `keepingLineBreaks` (a report), never in a one-line error; tabs never (the tool
    /// writes none itself: one in a value would misalign a table).
    public static func sanitized(_ text: String, keepingLineBreaks: Bool) -> String {
        let capped = cappingValues(text)
        func isKept(_ scalar: Unicode.Scalar) -> Bool {
            (keepingLineBreaks && scalar == "\n") || !isControl(scalar)
        }
        guard !capped.unicodeScalars.allSatisfy(isKept) else { return capped }  // the usual case
        var result = String.UnicodeScalarView()
        for scalar in capped.unicodeScalars {
            if isKept(scalar) {
                result.append(scalar)
            } else {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            }
        }
        return String(result)
    }

    /// `value` as one line of text: every control character, line feed, carriage return and tab
    /// included, written as `\u{…}` (nothing cut: the output path caps). For a value put into a
    /// report whose own line breaks are kept.
    public static func oneLine(_ value: some StringProtocol) -> String {
        guard value.unicodeScalars.contains(where: isControl) else { return String(value) }  // the usual case
        var result = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            if isControl(scalar) {
                result.append(contentsOf: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}".unicodeScalars)
            } else {
                result.append(scalar)
            }
        }
        return String(result)
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: return true
        case 0x200E, 0x200F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }

    /// Each run of non-space characters longer than `maximumValueLength` becomes its start, an
    /// ellipsis saying how many characters were left out, and its end. One pass; a text without
    /// such a run is returned as it is.
    private static func cappingValues(_ text: String) -> String {
        var longest = 0, run = 0
        for scalar in text.unicodeScalars {
            run = scalar == " " || scalar == "\n" ? 0 : run + 1
            longest = max(longest, run)
        }
        guard longest > maximumValueLength else { return text }
        let scalars = Array(text.unicodeScalars)
        var result: [Unicode.Scalar] = []
        result.reserveCapacity(min(scalars.count, 4 * maximumMessageLength))
        var runStart = 0
        for index in 0...scalars.count {
            guard index == scalars.count || scalars[index] == " " || scalars[index] == "\n" else { continue }
            let length = index - runStart
            if length > maximumValueLength {
                let kept = maximumValueLength / 2
                result += scalars[runStart..<runStart + kept]
                result += "…[\(length - 2 * kept) characters left out]…".unicodeScalars
                result += scalars[index - kept..<index]
            } else {
                result += scalars[runStart..<index]
            }
            if index < scalars.count { result.append(scalars[index]) }
            runStart = index + 1
        }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: result)
        return String(view)
    }
}

extension DefaultStringInterpolation {
    /// `"Backed up \(oneLine: path)"`: the value made one line (`TerminalText.oneLine(_:)`), so
    /// a line feed in a file or entity name cannot start a line of its own in a report.
    public mutating func appendInterpolation(oneLine value: some StringProtocol) {
        appendLiteral(TerminalText.oneLine(value))
    }
}
