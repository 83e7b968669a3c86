@testable import StoreRescue

/// The ten-version lineage of seed 001, as its author describes it, on one entity `Item`:
/// V1 initial (`title`); V2 adds the required String `name`; V3 the required UUID `id`; V4 the
/// optional String `bs`; V5 the optional Int `attr5` (default 0); V6 the optional Int `attr6`
/// and changes `attr5`'s default to 2; V7 the optional String `attr7` and `attr5`'s default to
/// 4; V8 the required Int `count` (default 0); V9 deletes `attr7`; V10 deletes `attr6`.
enum SeedLineage {
    static func versions() -> [CatalogVersion] {
        typealias M = TestModel
        var properties: [PropertyDescription] = [M.attribute("title")]
        var result: [CatalogVersion] = []
        func add(_ number: Int, _ change: () -> Void) {
            change()
            result.append(M.version("V\(number)", [EntityDescription(name: "Item", properties: properties)], identifiers: ["\(number)"]))
        }
        func setDefault(_ name: String, _ value: String) {
            properties = properties.map { property in
                guard case .attribute(var attribute) = property, attribute.name == name else { return property }
                attribute.defaultValue = value
                return .attribute(attribute)
            }
        }
        add(1) {}
        add(2) { properties.append(M.attribute("name", optional: false)) }
        add(3) { properties.append(M.attribute("id", .uuid, optional: false)) }
        add(4) { properties.append(M.attribute("bs")) }
        add(5) { properties.append(M.attribute("attr5", .integer64, default: "0")) }
        add(6) { properties.append(M.attribute("attr6", .integer64)); setDefault("attr5", "2") }
        add(7) { properties.append(M.attribute("attr7")); setDefault("attr5", "4") }
        add(8) { properties.append(M.attribute("count", .integer64, optional: false, default: "0")) }
        add(9) { properties.removeAll { $0.name == "attr7" } }
        add(10) { properties.removeAll { $0.name == "attr6" } }
        return result
    }

    static func lightweight(_ versions: [Int], _ index: Int) -> CatalogStage {
        CatalogStage(kind: .lightweight, span: .versions(versions.map { "V\($0)" }), jsonPath: "stages[\(index)]")
    }

    static func custom(_ from: Int, _ to: Int, _ index: Int, _ custom: CustomStageDefinition = CustomStageDefinition()) -> CatalogStage {
        CatalogStage(kind: .custom, span: .pair(from: "V\(from)", to: "V\(to)"), custom: custom, jsonPath: "stages[\(index)]")
    }

    static func pair(_ from: Int, _ to: Int, _ index: Int) -> CatalogStage {
        CatalogStage(kind: .lightweight, span: .pair(from: "V\(from)", to: "V\(to)"), jsonPath: "stages[\(index)]")
    }

    /// V1 → V2 fills `name`, V2 → V3 gives each item a new `id`.
    static let fillsName = CustomStageDefinition(map: [.init(entity: "Item", assignments: [.init(property: "name", expression: "coalesce(title, 'untitled')")])])
    static let givesIDs = CustomStageDefinition(map: [.init(entity: "Item", assignments: [.init(property: "id", expression: "uuid()")])])

    /// The seed's full plan (#5 and #7): custom, custom, lightweight [V4, V5, V6], custom V7 → V8,
    /// lightweight [V9, V10].
    static func fullPlan() -> [CatalogStage] {
        [custom(1, 2, 0, fillsName), custom(2, 3, 1, givesIDs), lightweight([4, 5, 6], 2), custom(7, 8, 3), lightweight([9, 10], 4)]
    }
}
