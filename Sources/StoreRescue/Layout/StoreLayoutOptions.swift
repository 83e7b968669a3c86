/// Options for `StoreLayoutBuilder`. The zero value is the layout of the model alone.
public struct StoreLayoutOptions: Sendable, Equatable {
    /// Add the persistent history tables (`ACHANGE`, `ATRANSACTION`, `ATRANSACTIONSTRING`) and
    /// their entity numbers 16001–16003, as Core Data does when history tracking is on and
    /// SwiftData always does.
    public var includesPersistentHistory = false

    public init(includesPersistentHistory: Bool = false) {
        self.includesPersistentHistory = includesPersistentHistory
    }
}
