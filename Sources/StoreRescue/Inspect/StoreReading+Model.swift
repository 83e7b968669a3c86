import Foundation

extension StoreReading {
    /// The largest compressed `Z_MODELCACHE` read, and the most it may inflate to.
    static let maximumModelCacheBytes: Int64 = 32 << 20
    static let maximumInflatedModelBytes = 128 << 20

    /// Decodes the store's own model from `Z_MODELCACHE`, recomputes the version hashes, digest
    /// and checksum, and compares them with the metadata.
    mutating func readModel(_ schema: PhysicalSchema, metadata: StoreMetadata?) throws -> InspectionReport.ModelSummary? {
        guard schema.table(named: "Z_MODELCACHE") != nil else {
            let framework = metadata?.frameworkVersion.map { " (framework \($0) predates the model cache)" } ?? ""
            findings.append(Finding(.warning, .noModelCache, "no Z_MODELCACHE table\(framework): the stored hashes cannot be checked against the model that wrote them"))
            return nil
        }
        let rows = try connection.rows("SELECT typeof(Z_CONTENT), length(Z_CONTENT) FROM Z_MODELCACHE LIMIT 2")
        guard let row = rows.first, row[0].string == "blob" else {
            let what = rows.isEmpty ? "has no row" : "holds \(rows[0][0].string == "null" ? "NULL" : "a non-blob value")"
            findings.append(Finding(.warning, .noModelCache, "Z_MODELCACHE \(what): the stored hashes cannot be checked against the model that wrote them"))
            return nil
        }
        let length = row[1].int64 ?? 0
        guard length <= Self.maximumModelCacheBytes else {
            findings.append(Finding(.error, .modelCacheUnreadable, "Z_MODELCACHE is \(length) bytes, over the \(Self.maximumModelCacheBytes)-byte limit; not read"))
            return nil
        }
        let compressed = try connection.scalar("SELECT Z_CONTENT FROM Z_MODELCACHE LIMIT 1")?.data ?? Data()
        let model: ManagedObjectModel
        do {
            model = try ModelArchiveDecoder.decodeModelCache(compressed: compressed, maximumInflatedBytes: Self.maximumInflatedModelBytes)
        } catch {
            findings.append(Finding(.error, .modelCacheUnreadable, "Z_MODELCACHE cannot be decoded: \(error)"))
            return nil
        }
        cachedModel = model
        cachedModelBytes = compressed
        return compare(model: model, with: metadata)
    }

    private mutating func compare(model: ManagedObjectModel, with metadata: StoreMetadata?) -> InspectionReport.ModelSummary {
        let computed = EntityVersionHasher.versionHashes(for: model)
        let stored = metadata?.versionHashes ?? [:]
        let names = Set(computed.keys).union(stored.keys)
        let mismatched = names.filter { computed[$0] != stored[$0] }.sorted()
        let digest = EntityVersionHasher.hashesDigest(computed)
        let checksum = EntityVersionHasher.versionChecksum(computed)
        let matches = metadata?.versionHashes != nil && mismatched.isEmpty
        if metadata?.versionHashes != nil, !mismatched.isEmpty {
            findings.append(Finding(
                .error, .hashesDisagree,
                "the stored version hashes disagree with the store's own model cache for \(mismatched.prefix(20).joined(separator: ", "))\(mismatched.count > 20 ? " and \(mismatched.count - 20) more" : ""): the metadata was edited or stamped for another version"))
        }
        if matches, let storedDigest = metadata?.hashesDigest, storedDigest != digest {
            findings.append(Finding(.error, .digestDisagrees, "NSStoreModelVersionHashesDigest is \(storedDigest), the hashes give \(digest)"))
        }
        if matches, let storedChecksum = metadata?.versionChecksum, storedChecksum != checksum {
            findings.append(Finding(.error, .checksumDisagrees, "NSStoreModelVersionChecksumKey is \(storedChecksum), the hashes give \(checksum)"))
        }
        let entities = model.entities.map { entity in
            InspectionReport.ModelEntity(
                name: entity.name, versionHash: computed[entity.name]?.base64EncodedString() ?? "",
                superentity: entity.superentityName, isAbstract: entity.isAbstract,
                versionHashModifier: entity.versionHashModifier, uniquenessConstraints: entity.uniquenessConstraints,
                attributes: entity.attributes.map {
                    InspectionReport.ModelAttribute(
                        name: $0.name, type: $0.type.modelFileName, isOptional: $0.isOptional, isTransient: $0.isTransient,
                        defaultValue: $0.defaultValue, versionHashModifier: $0.versionHashModifier,
                        allowsExternalBinaryDataStorage: $0.allowsExternalBinaryDataStorage,
                        preservesValueInHistoryOnDeletion: $0.preservesValueInHistoryOnDeletion, isIndexed: $0.isIndexed)
                },
                relationships: entity.relationships.map {
                    InspectionReport.ModelRelationship(
                        name: $0.name, destination: $0.destinationEntityName, inverse: $0.inverseName,
                        minCount: $0.minCount, maxCount: $0.maxCount, isToMany: $0.isToMany, isOrdered: $0.isOrdered,
                        isOptional: $0.isOptional, isTransient: $0.isTransient, deleteRule: "\($0.deleteRule)")
                })
        }
        return InspectionReport.ModelSummary(
            versionIdentifiers: model.versionIdentifiers, entities: entities, hashesMatchMetadata: matches,
            mismatchedEntities: mismatched, computedHashesDigest: digest, computedVersionChecksum: checksum)
    }
}
