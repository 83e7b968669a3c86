import Foundation

/// Property hashes remembered across the models of one process: the versions of a catalog
/// repeat most of their properties (50 versions of a 12-entity app hash the same `id`, `title`,
/// `createdAt` hundreds of times), and each hash is two SHA-256 passes over freshly built bytes.
/// Keyed by the whole property description (every field that enters the hash), so a cached hash
/// is always the one `EntityVersionHasher.hash(of:)` would compute. Bounded: past
/// `maximumEntries` (a hostile model with 100,000 distinct attributes) it stops remembering.
final class PropertyHashCache: @unchecked Sendable {
    static let shared = PropertyHashCache()
    static let maximumEntries = 50_000

    private let lock = NSLock()
    private var hashes: [PropertyDescription: Data] = [:]

    func hash(of property: PropertyDescription) -> Data {
        lock.lock()
        let known = hashes[property]
        lock.unlock()
        if let known { return known }
        let computed = EntityVersionHasher.hash(of: property)
        lock.lock()
        if hashes.count < Self.maximumEntries { hashes[property] = computed }
        lock.unlock()
        return computed
    }
}
