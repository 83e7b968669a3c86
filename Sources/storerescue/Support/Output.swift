import Foundation
import StoreRescue

/// Writing results: text and JSON on stdout, errors on stderr as `Error: …` / `Try: …`.
enum Output {
    static func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }

    static func writeJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(value)
        data.append(0x0A)
        FileHandle.standardOutput.write(data)
    }

    static func writeError(message: String, hint: String?) {
        var text = "Error: \(message)\n"
        if let hint { text += "Try: \(hint)\n" }
        FileHandle.standardError.write(Data(text.utf8))
    }
}
