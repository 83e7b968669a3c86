import Foundation

/// Options for `StoreCreator`. The zero value writes what current Core Data writes for a store
/// without history tracking.
public struct StoreCreationOptions: Sendable, Equatable {
    /// Add the persistent history tables (SwiftData stores always have them).
    public var includesPersistentHistory = false
    /// `NSPersistenceFrameworkVersion` (default 1523); decides which metadata keys are written
    /// (see `StoreMetadataWriter`).
    public var frameworkVersion = StoreMetadataWriter.defaultFrameworkVersion
    /// `NSPersistenceMaximumFrameworkVersion`; nil: the framework version, from 1523 on.
    public var maximumFrameworkVersion: Int?
    /// `Z_UUID`; nil: a new random UUID.
    public var storeUUID: UUID?
    /// More metadata keys to write (app-defined keys); the keys Core Data itself writes are
    /// computed and cannot be overridden here.
    public var additionalMetadata: [String: PropertyListValue] = [:]

    public init(
        includesPersistentHistory: Bool = false, frameworkVersion: Int = StoreMetadataWriter.defaultFrameworkVersion,
        maximumFrameworkVersion: Int? = nil, storeUUID: UUID? = nil, additionalMetadata: [String: PropertyListValue] = [:]
    ) {
        self.includesPersistentHistory = includesPersistentHistory
        self.frameworkVersion = frameworkVersion
        self.maximumFrameworkVersion = maximumFrameworkVersion
        self.storeUUID = storeUUID
        self.additionalMetadata = additionalMetadata
    }
}
