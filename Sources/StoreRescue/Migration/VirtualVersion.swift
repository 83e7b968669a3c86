/// One model version's objects and links, written as SQL over a *base* database (the store,
/// or the last version the migrator wrote out): what each row of each entity would hold at this
/// version, and which objects each relationship links.
///
/// Nothing is written to make it. A hop turns the version it starts from into the one it ends
/// at by rewriting expressions (a renamed attribute is the same expression under a new name; a
/// type change wraps it in a conversion; a default fills its NULLs), so any number of hops
/// compose into one set of expressions over the base — and the migrator rebuilds each table
/// once, however many versions lie between (`Docs/MIGRATE.md#one-rebuild`). The analyzer counts
/// through the same expressions, so what a dry run predicts is what the migration writes.
struct VirtualVersion {
    let version: CatalogVersion
    let layout: StoreLayout
    /// The schema name the base database is attached under (`main` when reading a store in
    /// place, `base` when the migrator writes a new file).
    let baseSchema: String
    var rowSources: [RowSource]
    var links: [LinkSet]
    /// Base `Z_ENT` → the entity its rows belong to at this version (nil: removed).
    var entityOfBaseNumber: [Int64: String]
    /// Base `Z_PRIMARYKEY.Z_MAX` by the entity (at this version) whose root counter it was.
    var carriedMaximumKeys: [String: Int64]
    /// Attributes (`Entity.attribute`) whose expression calls a function that answers
    /// differently at each call (`uuid()`): they must not be copied into later expressions.
    var nondeterministicAttributes: Set<String>
    /// True when a hop on the way removed an entity, changed an entity's ancestry, or moved a
    /// relationship to another entity or destination: objects may then no longer be of a kind
    /// they were, and links they held may have no place left (`linksOnRowsThatLeft`).
    var objectsMayHaveLeftTheirKind = false
    /// An app's own columns not carried into this version: generated ones (in the base), and
    /// those whose name the layout the rows went to uses (at the hop that leads here).
    var leftOutOwnColumns: [LeftOutOwnColumn] = []
    /// The base's indexes its version's layout does not make (`OwnIndex`): carried through the
    /// hops, decided at the version written (`indexCarriage`).
    var ownIndexes: [OwnIndex] = []

    /// The row sources of `entity` (its own rows, not its subentities').
    func rowSources(of entity: String) -> [RowSource] { rowSources.filter { $0.entity == entity } }

    /// The row sources of `entity` and every subentity.
    func rowSources(ofKind entity: String) -> [RowSource] {
        let kinds = Set(descendants(of: entity))
        return rowSources.filter { kinds.contains($0.entity) }
    }

    /// `entity` and every entity below it in this version's model.
    func descendants(of entity: String) -> [String] {
        var result = [entity]
        var index = 0
        while index < result.count {
            result += version.model.entities.filter { $0.superentityName == result[index] }.map(\.name)
            index += 1
        }
        return result
    }

    /// The link set a relationship end belongs to, with the end's side.
    func linkSet(for end: LinkSet.End) -> (set: LinkSet, side: LinkSet.Side)? {
        for set in links {
            if set.a == end { return (set, .a) }
            if set.b == end { return (set, .b) }
        }
        return nil
    }
}

/// Where one entity's rows come from: one base table's rows of one entity number (or, for a
/// custom stage's `create`, one new object per row of another entity).
struct RowSource {
    /// Stable across hops, so values held on a row stay attached to it.
    let id: Int
    /// The entity (at the current version) the rows belong to.
    var entity: String
    /// The base table, and the FROM item that reads it (alias `r`).
    var baseTable: String
    var from: String
    /// Which rows of `from` (over alias `r`).
    var condition: String
    var pk: String
    var opt: String
    /// `Z_ENT` of the rows in the base (nil for created objects).
    var baseEntityNumber: Int64?
    /// Attribute name → SQL over alias `r`; a missing name is NULL.
    var attributes: [String: String]
    /// For a `create`: the `Z_PK` of the new objects is `<first free key> + row_number()`; the
    /// first free key is worked out when the rows are written.
    var createdFrom: String?
    /// The app's own columns on these rows (`OwnColumn`), carried wherever the rows go.
    var ownColumns: [OwnColumn] = []

    static let alias = "r"
}

/// The links of one relationship, or of a relationship and its inverse (one set for both).
struct LinkSet {
    /// A relationship, by the entity that declares it.
    struct End: Hashable, CustomStringConvertible {
        var entity: String
        var relationship: String
        var description: String { "\(entity).\(relationship)" }
    }

    enum Side { case a, b }

    /// A link held on a row: the row is on side `side`; `other` is the `Z_PK` of the object on
    /// the other side; `order` this row's position in the other object's ordered collection;
    /// `otherEntity` the other object's base `Z_ENT`, when the row keeps it.
    struct Held {
        var side: Side
        var other: String
        var order: String?
        var otherEntity: String?
    }

    var a: End
    var b: End?
    /// `SELECT a, b, na, nb …`: `a`/`b` the `Z_PK`s of the linked objects, `na` the position of
    /// `b` in `a`'s ordered collection, `nb` the position of `a` in `b`'s (NULL when unordered).
    var query: String
    /// Row source id → the link held on its rows (a to-one's column, a hidden column).
    var held: [Int: Held]
    /// True when objects at either end may have been discarded by a hop: links to them must be
    /// cleared when written.
    var mayDangle: Bool
    /// The relationship at that end is ordered now but its links carry no position yet (it was
    /// unordered, or the links are new): positions are given when the links are written.
    var needsOrderA = false
    var needsOrderB = false
    /// True when the set has no link at all (a new relationship): nothing to read or write.
    var isEmpty = false

    /// The same links seen from the other side.
    var swapped: LinkSet {
        guard let b else { return self }
        return LinkSet(
            a: b, b: a, query: "SELECT b AS a, a AS b, nb AS na, na AS nb FROM (\(query))",
            held: held.mapValues { Held(side: $0.side == .a ? .b : .a, other: $0.other, order: $0.order, otherEntity: $0.otherEntity) },
            mayDangle: mayDangle, needsOrderA: needsOrderB, needsOrderB: needsOrderA, isEmpty: isEmpty)
    }

    static let emptyQuery = "SELECT NULL AS a, NULL AS b, NULL AS na, NULL AS nb WHERE 0"
}
