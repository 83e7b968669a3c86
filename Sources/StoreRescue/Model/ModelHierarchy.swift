/// The inheritance structure of a model, worked out once so that every question about it costs
/// what the answer costs: an entity's index, parent, depth and root, its subentities, the
/// entities in parents-first order, and the properties it sees (its own and inherited ones).
///
/// Asking `ManagedObjectModel` instead walks the chain and searches the entity list at each step;
/// done for every entity and property that made hashing, checking and laying out a 500-deep chain
/// take close to a minute (cubic in the depth). Here each walk is done once and remembered.
///
/// A model is also bounded before anything else is done with it: at most `maximumEntities`
/// entities (Core Data numbers entities below 16001) and inheritance chains at most
/// `maximumDepth` deep (real models rarely go past five).
///
/// ```swift
/// let hierarchy = ModelHierarchy(model)
/// if let problem = hierarchy.boundsProblem(in: model) { throw … problem.reason }
/// for index in hierarchy.parentsFirst { print(model.entities[index].name, hierarchy.depth[index]) }
/// ```
///
/// A malformed model still gets an answer: a parent that is missing ends the chain, and a chain
/// that loops ends before the first entity it would repeat (as `ManagedObjectModel.ancestry` does);
/// `isInCycle` marks the entities whose chains loop.
public struct ModelHierarchy: Sendable {
    public static let maximumEntities = 16_000
    public static let maximumDepth = 100

    /// Entity name → index in `model.entities` (the first, when names repeat).
    public let indexByName: [String: Int]
    /// The parent's index; nil for a root or a missing parent.
    public let parent: [Int?]
    /// Levels above the entity along its chain (0 for a root).
    public let depth: [Int]
    /// True for entities whose parent chain loops (a malformed model): on a loop, or below one.
    public let isInCycle: [Bool]
    /// Direct subentities of each entity, in model order.
    public let children: [[Int]]
    /// Every entity not in a cycle, each after its parent.
    public let parentsFirst: [Int]

    public init(_ model: ManagedObjectModel) {
        let entities = model.entities
        var indexByName: [String: Int] = [:]
        for (index, entity) in entities.enumerated() where indexByName[entity.name] == nil {
            indexByName[entity.name] = index
        }
        let parent = entities.map { entity in entity.superentityName.flatMap { indexByName[$0] } }
        var children = Array(repeating: [Int](), count: entities.count)
        for (index, parentIndex) in parent.enumerated() {
            if let parentIndex { children[parentIndex].append(index) }
        }
        // Depths from the roots down: an entity never reached has a chain that loops.
        var depth = Array(repeating: -1, count: entities.count)
        var parentsFirst: [Int] = []
        parentsFirst.reserveCapacity(entities.count)
        for root in entities.indices where parent[root] == nil {
            depth[root] = 0
            parentsFirst.append(root)
        }
        var next = 0
        while next < parentsFirst.count {
            let current = parentsFirst[next]
            next += 1
            for child in children[current] where depth[child] < 0 {
                depth[child] = depth[current] + 1
                parentsFirst.append(child)
            }
        }
        let isInCycle = depth.map { $0 < 0 }
        // The rest hang on loops. Find each loop once (following parents, at most one each);
        // an entity on a loop of L sees L - 1 levels before its chain repeats, one hanging t
        // levels below a loop entity t more.
        var state = Array(repeating: 0, count: entities.count)  // 0 new, 1 on the current walk, 2 done
        var loopMembers: [Int] = []
        for start in entities.indices where isInCycle[start] && state[start] == 0 {
            var walk: [Int] = []
            var current = start
            while state[current] == 0 {
                state[current] = 1
                walk.append(current)
                guard let up = parent[current] else { break }
                current = up
            }
            if state[current] == 1, let entry = walk.firstIndex(of: current) {
                let loop = walk[entry...]
                for member in loop { depth[member] = loop.count - 1 }
                loopMembers += loop
            }
            for member in walk { state[member] = 2 }
        }
        var frontier = loopMembers
        var position = 0
        while position < frontier.count {
            let current = frontier[position]
            position += 1
            for child in children[current] where depth[child] < 0 {
                depth[child] = depth[current] + 1
                frontier.append(child)
            }
        }
        self.indexByName = indexByName
        self.parent = parent
        self.depth = depth
        self.isInCycle = isInCycle
        self.children = children
        self.parentsFirst = parentsFirst
    }

    /// Why the model is too large to read, with the entity to blame (the deepest one, or the
    /// first past the limit), or nil. The reason does not repeat the entity's name: callers
    /// place it (a line, a JSON path, an entity).
    public func boundsProblem(in model: ManagedObjectModel) -> (entity: Int, reason: String)? {
        if model.entities.count > Self.maximumEntities {
            return (Self.maximumEntities, "the model has \(model.entities.count) entities; at most \(Self.maximumEntities) are read (Core Data numbers entities below 16001)")
        }
        guard let deepest = depth.indices.max(by: { depth[$0] < depth[$1] }), depth[deepest] > Self.maximumDepth else { return nil }
        return (deepest, "inherits through \(depth[deepest]) levels of superentities; at most \(Self.maximumDepth) are read")
    }

    /// Each entity's chain, `[entity, parent, …, root]`, as indexes.
    public func chain(of index: Int) -> [Int] {
        var result = [index]
        var seen: Set<Int> = [index]
        var current = index
        while let up = parent[current], seen.insert(up).inserted {
            result.append(up)
            current = up
        }
        return result
    }

    /// The root of `index`'s chain.
    public func root(of index: Int) -> Int { chain(of: index).last ?? index }

    /// For every entity: property name → (declaring entity, position in its `properties`), the
    /// nearest declaration winning (a subentity's redeclaration over its ancestor's). Built
    /// parents first, each entity starting from its parent's table; entities in a cycle walk their
    /// own (truncated) chain.
    public func visibleProperties(in model: ManagedObjectModel) -> [[String: PropertyLocation]] {
        var result = Array(repeating: [String: PropertyLocation](), count: model.entities.count)
        func addOwn(_ index: Int, to table: inout [String: PropertyLocation]) {
            for (position, property) in model.entities[index].properties.enumerated() {
                table[property.name] = PropertyLocation(entity: index, position: position)
            }
        }
        for index in parentsFirst {
            var table = parent[index].map { result[$0] } ?? [:]
            addOwn(index, to: &table)
            result[index] = table
        }
        for index in model.entities.indices where isInCycle[index] {
            var table: [String: PropertyLocation] = [:]
            for level in chain(of: index).reversed() { addOwn(level, to: &table) }
            result[index] = table
        }
        return result
    }

    /// Where a property is declared: the entity's index and the property's position in it.
    public struct PropertyLocation: Sendable, Equatable {
        public var entity: Int
        public var position: Int
    }
}
