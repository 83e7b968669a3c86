import Foundation

extension CatalogFile {
    /// Appends `version` as an inline definition in compiled form (`"compiled": true`), with its
    /// version checksum recorded so later edits that change its hashes are caught on load.
    ///
    /// Does not check that the name is free: `CatalogLearner` does, against the loaded catalog
    /// (an imported folder's version names are only known once it is read).
    public mutating func appendInlineVersion(_ version: CatalogVersion, notes: String? = nil) {
        var members = [JSONMember("name", .string(version.name))]
        if let notes { members.append(JSONMember("notes", .string(notes))) }
        members += [
            JSONMember("versionChecksum", .string(version.versionChecksum)),
            JSONMember("identifiers", .array(version.model.versionIdentifiers.map(JSONValue.string))),
            JSONMember("compiled", .bool(true)),
            JSONMember("entities", InlineModelEncoder.entities(of: version.model)),
        ]
        entries.append(Entry(
            name: version.name, source: .inline(version.model), versionChecksum: version.versionChecksum, notes: notes,
            jsonPath: "versions[\(entries.count)]"))
        if let index = document.firstIndex(where: { $0.key == "versions" }), case .array(let existing) = document[index].value {
            document[index].value = .array(existing + [.object(members)])
        } else {
            document.append(JSONMember("versions", .array([.object(members)])))
        }
    }

    /// The document as JSON text: what was read, in its order, plus what was appended.
    public func encoded() -> Data {
        Data(JSONWriter.write(.object(document)).utf8)
    }

    /// Writes the catalog to `path` atomically (temporary file, flush, rename). A file that
    /// existed when this catalog was read must be unchanged, and a new catalog must not have
    /// appeared meanwhile; a symbolic link at `path` is refused. The catalog is the caller's final
    /// result (`PublishedResult`: "the catalog").
    ///
    /// - Throws: `CatalogFileError.cannotWrite`.
    public func write() throws {
        do {
            try AtomicFileWriter.write(
                encoded(), to: path, expected: readFingerprint, as: PublishedResult(path: path, description: "the catalog"))
        } catch {
            throw CatalogFileError.cannotWrite(path: path, reason: error.reason, status: error.status)
        }
    }
}
