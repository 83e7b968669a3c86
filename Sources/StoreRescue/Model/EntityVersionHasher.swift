import Crypto
import Foundation

/// Computes Core Data's entity version hashes (`NSStoreModelVersionHashes`) and the digest and
/// checksum stored beside them, from a `ManagedObjectModel` alone.
///
/// The algorithm (format notes §4), all integers little-endian, strings UTF-8:
/// - property base = SHA-256(name ‖ u16 flags (optional 1, transient 2, read-only 4) ‖ modifier);
/// - attribute = SHA-256(base ‖ u32 type ‖ `01` if external storage ‖ `01` if preserved in history);
/// - relationship = SHA-256(base ‖ destination ‖ inverse ‖ u32 maxCount ‖ u32 minCount ‖ `01 00`
///   if ordered);
/// - entity = SHA-256(name ‖ u8 isAbstract ‖ superentity hash ‖ the hashes of all non-transient
///   properties, inherited included, sorted by name ‖ modifier ‖ uniqueness constraints joined
///   with "." and sorted).
///
/// Names are ordered by code point (UTF-8 bytes), not by Swift's `String` comparison.
///
/// ```swift
/// let hashes = EntityVersionHasher.versionHashes(for: model)
/// let checksum = EntityVersionHasher.versionChecksum(hashes)
/// ```
public enum EntityVersionHasher {
    /// Entity name → 32-byte version hash, for every entity of `model`.
    ///
    /// A malformed model (a superentity cycle, a missing superentity) still gets a deterministic
    /// answer: the ancestry stops where it would repeat or break.
    public static func versionHashes(for model: ManagedObjectModel) -> [String: Data] {
        // Parents first, each entity's hash from its parent's (the chain's hashes are each
        // computed once) and each property hashed once where it is declared: linear in the
        // model, where hashing every chain from its root was cubic in the depth.
        let hierarchy = ModelHierarchy(model)
        let visible = hierarchy.visibleProperties(in: model)
        var propertyHashes: [Int: [Int: (name: [UInt8], hash: Data)]] = [:]
        func propertyHash(_ location: ModelHierarchy.PropertyLocation) -> (name: [UInt8], hash: Data) {
            if let known = propertyHashes[location.entity]?[location.position] { return known }
            let property = model.entities[location.entity].properties[location.position]
            let hashed = (name: Array(property.name.utf8), hash: PropertyHashCache.shared.hash(of: property))
            propertyHashes[location.entity, default: [:]][location.position] = hashed
            return hashed
        }
        var entityHashes = [Data](repeating: Data(), count: model.entities.count)
        for index in hierarchy.parentsFirst {
            let properties = visible[index].values
                .filter { !model.entities[$0.entity].properties[$0.position].isTransient }
                .map(propertyHash)
            entityHashes[index] = levelHash(
                model.entities[index], superHash: hierarchy.parent[index].map { entityHashes[$0] }, properties: properties)
        }
        for index in model.entities.indices where hierarchy.isInCycle[index] {
            entityHashes[index] = hash(of: hierarchy.chain(of: index).map { model.entities[$0] })
        }
        var result: [String: Data] = [:]
        for (index, entity) in model.entities.enumerated() {
            result[entity.name] = entityHashes[index]
        }
        return result
    }

    /// `NSStoreModelVersionHashesDigest`: base64 of SHA-512 over each entity's UTF-8 name and
    /// hash, entities in code-point order.
    public static func hashesDigest(_ hashes: [String: Data]) -> String {
        var hasher = SHA512()
        for (name, hash) in sortedByCodePoint(hashes) {
            hasher.update(data: Data(name.utf8))
            hasher.update(data: hash)
        }
        return Data(hasher.finalize()).base64EncodedString()
    }

    /// `NSStoreModelVersionChecksumKey`: base64 of SHA-256 over the hashes concatenated in
    /// code-point order of the entity names.
    public static func versionChecksum(_ hashes: [String: Data]) -> String {
        var hasher = SHA256()
        for (_, hash) in sortedByCodePoint(hashes) { hasher.update(data: hash) }
        return Data(hasher.finalize()).base64EncodedString()
    }

    // MARK: Pieces

    static func sortedByCodePoint<Value>(_ dictionary: [String: Value]) -> [(key: String, value: Value)] {
        dictionary.sorted { isInCodePointOrder($0.key, $1.key) }
    }

    static func isInCodePointOrder(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }

    /// The hash of `chain[0]`, where `chain` is its ancestry `[entity, parent, …, root]`, every
    /// level from the root: for an entity whose chain loops (a malformed model), which has no
    /// parent hash to start from.
    static func hash(of chain: [EntityDescription]) -> Data {
        var superHash: Data?
        // From the root down, so each level's superentity hash is ready.
        for level in chain.indices.reversed() {
            let entity = chain[level]
            // Own properties override inherited ones of the same name (a malformed model).
            var byName: [String: PropertyDescription] = [:]
            for ancestor in chain[level...].reversed() {
                for property in ancestor.properties { byName[property.name] = property }
            }
            let hashed = byName.values.filter { !$0.isTransient }.map { (name: Array($0.name.utf8), hash: hash(of: $0)) }
            superHash = levelHash(entity, superHash: superHash, properties: hashed)
        }
        return superHash ?? Data()
    }

    /// One entity's hash from its superentity's hash and the (UTF-8 name, hash) pairs of the
    /// non-transient properties it sees, inherited ones included.
    static func levelHash(_ entity: EntityDescription, superHash: Data?, properties: [(name: [UInt8], hash: Data)]) -> Data {
        // Fed to SHA-256 piece by piece: no buffer of the whole input is built.
        var hasher = SHA256()
        hasher.update(data: Data(entity.name.utf8))
        hasher.update(data: Data([entity.isAbstract ? 1 : 0]))
        if let superHash { hasher.update(data: superHash) }
        for property in properties.sorted(by: { precedes($0.name, $1.name) }) { hasher.update(data: property.hash) }
        if let modifier = entity.versionHashModifier { hasher.update(data: Data(modifier.utf8)) }
        let constraints = entity.uniquenessConstraints.map { $0.joined(separator: ".") }.sorted(by: isInCodePointOrder)
        for constraint in constraints { hasher.update(data: Data(constraint.utf8)) }
        return Data(hasher.finalize())
    }

    /// Byte order of two UTF-8 names (`memcmp`, then the shorter first).
    static func precedes(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        let common = min(lhs.count, rhs.count)
        if common > 0 {
            let order = lhs.withUnsafeBufferPointer { left in
                rhs.withUnsafeBufferPointer { right in memcmp(left.baseAddress!, right.baseAddress!, common) }
            }
            if order != 0 { return order < 0 }
        }
        return lhs.count < rhs.count
    }

    static func hash(of property: PropertyDescription) -> Data {
        switch property {
        case .attribute(let attribute):
            var bytes = baseHash(
                name: attribute.name, isOptional: attribute.isOptional, isTransient: attribute.isTransient,
                isReadOnly: attribute.isReadOnly, modifier: attribute.versionHashModifier)
            append(UInt32(truncatingIfNeeded: attribute.type.rawValue), to: &bytes)
            if attribute.allowsExternalBinaryDataStorage { bytes.append(1) }
            if attribute.preservesValueInHistoryOnDeletion { bytes.append(1) }
            return sha256(bytes)
        case .relationship(let relationship):
            var bytes = baseHash(
                name: relationship.name, isOptional: relationship.isOptional, isTransient: relationship.isTransient,
                isReadOnly: relationship.isReadOnly, modifier: relationship.versionHashModifier)
            bytes.append(contentsOf: relationship.destinationEntityName.utf8)
            if let inverse = relationship.inverseName { bytes.append(contentsOf: inverse.utf8) }
            append(UInt32(truncatingIfNeeded: relationship.maxCount), to: &bytes)
            append(UInt32(truncatingIfNeeded: relationship.minCount), to: &bytes)
            if relationship.isOrdered { bytes.append(contentsOf: [1, 0]) }
            return sha256(bytes)
        }
    }

    static func baseHash(name: String, isOptional: Bool, isTransient: Bool, isReadOnly: Bool, modifier: String?) -> Data {
        var bytes = Data(name.utf8)
        let flags: UInt16 = (isOptional ? 1 : 0) | (isTransient ? 2 : 0) | (isReadOnly ? 4 : 0)
        bytes.append(UInt8(flags & 0xFF))
        bytes.append(UInt8(flags >> 8))
        if let modifier { bytes.append(contentsOf: modifier.utf8) }
        return sha256(bytes)
    }

    static func append(_ value: UInt32, to bytes: inout Data) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    static func sha256(_ bytes: Data) -> Data {
        Data(SHA256.hash(data: bytes))
    }
}
