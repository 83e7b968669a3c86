import Foundation
@testable import StoreRescue

/// Builds `NSKeyedArchiver` property lists by hand, for tests of the archive and model readers.
struct KeyedArchiveBuilder {
    private(set) var objects: [PropertyListValue] = [.string("$null")]
    private var classes: [String: PropertyListValue] = [:]

    /// Appends a raw `$objects` entry and returns its UID.
    @discardableResult
    mutating func add(_ value: PropertyListValue) -> PropertyListValue {
        objects.append(value)
        return .uid(UInt64(objects.count - 1))
    }

    /// Replaces the `$objects` entry `uid` refers to.
    mutating func replace(_ uid: PropertyListValue, with value: PropertyListValue) {
        guard case .uid(let index) = uid else { preconditionFailure("not a UID") }
        objects[Int(index)] = value
    }

    mutating func classDescription(_ name: String, superclasses: [String]) -> PropertyListValue {
        if let existing = classes[name] { return existing }
        let uid = add(.dictionary(["$classname": .string(name), "$classes": .array(([name] + superclasses).map(PropertyListValue.string))]))
        classes[name] = uid
        return uid
    }

    /// An object of class `name` (its superclasses listed for `$classes`) with `fields`.
    mutating func object(_ name: String, superclasses: [String] = ["NSObject"], _ fields: [String: PropertyListValue]) -> PropertyListValue {
        var all = fields
        all["$class"] = classDescription(name, superclasses: superclasses)
        return add(.dictionary(all))
    }

    mutating func string(_ value: String) -> PropertyListValue { add(.string(value)) }

    mutating func array(_ elements: [PropertyListValue], className: String = "NSArray") -> PropertyListValue {
        object(className, superclasses: className == "NSArray" ? ["NSObject"] : ["NSArray", "NSObject"], ["NS.objects": .array(elements)])
    }

    mutating func set(_ elements: [PropertyListValue]) -> PropertyListValue {
        object("NSSet", ["NS.objects": .array(elements)])
    }

    mutating func dictionary(_ pairs: [(String, PropertyListValue)]) -> PropertyListValue {
        let keys = pairs.map { string($0.0) }
        return object("NSMutableDictionary", superclasses: ["NSDictionary", "NSObject"], ["NS.keys": .array(keys), "NS.objects": .array(pairs.map(\.1))])
    }

    mutating func knownKeysDictionary(_ pairs: [(String, PropertyListValue)]) -> PropertyListValue {
        let keys = array(pairs.map { string($0.0) })
        let mapping = object("NSKnownKeysMappingStrategy1", ["keys": keys, "length": .integer(Int64(pairs.count))])
        return object(
            "NSKnownKeysDictionary1", superclasses: ["NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
            ["searchMapping": mapping, "values": array(pairs.map(\.1))])
    }

    func archive(root: PropertyListValue) -> PropertyListValue {
        .dictionary([
            "$version": .integer(100_000), "$archiver": .string("NSKeyedArchiver"),
            "$top": .dictionary(["root": root]), "$objects": .array(objects),
        ])
    }

    func data(root: PropertyListValue) -> Data {
        BinaryPropertyListEncoder.encode(archive(root: root))
    }
}

/// A small model archive: entity `Person` (abstract, `name` String required and indexed, `age`
/// Integer 16 default 0, to-many ordered `friends`), subentity `Employee` (inherits through a
/// proxy, adds `badge` with a hash modifier, constrained unique on `badge` and on `badge, name`);
/// `Person` has a fetch index `byNameAge` (name ascending, age descending).
struct SyntheticModelArchive {
    var builder = KeyedArchiveBuilder()
    var root: PropertyListValue = .uid(0)
    var nameAttribute: PropertyListValue = .uid(0)
    var friends: PropertyListValue = .uid(0)
    var person: PropertyListValue = .uid(0)

    init() {
        var b = builder
        let attributeClasses = ["NSPropertyDescription", "NSObject"]
        person = b.add(.string("placeholder"))
        let employee = b.add(.string("placeholder"))
        nameAttribute = b.object("NSAttributeDescription", superclasses: attributeClasses, [
            "NSPropertyName": b.string("name"), "NSAttributeType": .integer(700), "_P": .integer(0xF1),
            "NSIsIndexed": .boolean(true), "NSFlagsKey": .integer(0), "NSDefaultValue": .uid(0), "NSEntity": person,
        ])
        let age = b.object("NSAttributeDescription", superclasses: attributeClasses, [
            "NSPropertyName": b.string("age"), "NSAttributeType": .integer(100), "_P": .integer(0xF3), "NSIsOptional": .boolean(true),
            "NSFlagsKey": .integer(4), "NSDefaultValue": .integer(0),
        ])
        friends = b.object("NSRelationshipDescription", superclasses: attributeClasses, [
            "NSPropertyName": b.string("friends"), "_P": .integer(0x4F3), "NSIsOptional": .boolean(true), "NSMinCount": .integer(0),
            "NSMaxCount": .integer(0), "NSDeleteRule": .integer(1), "NSDestinationEntity": person,
            "_NSInverseRelationshipName": .uid(0),
        ])
        let proxy = b.object("_NSPropertyDescriptionProxy", ["NSUnderlyingProperty": nameAttribute, "NSEntityDescription": employee])
        let badge = b.object("NSAttributeDescription", superclasses: attributeClasses, [
            "NSPropertyName": b.string("badge"), "NSAttributeType": .integer(300), "_P": .integer(0xF1),
            "NSVersionHashModifier": b.string("v2"),
        ])
        let personFields: [String: PropertyListValue] = [
            "NSEntityName": b.string("Person"), "NSIsAbstract": .boolean(true), "NSSuperentity": .uid(0),
            "NSClassNameForEntity": b.string("PersonMO"),
            "NSProperties": b.dictionary([("name", nameAttribute), ("age", age), ("friends", friends)]),
            "NSFetchIndexDescriptions": b.array([
                b.object("NSFetchIndexDescription", [
                    "NSIndexName": b.string("byNameAge"),
                    "NSIndexElements": b.array([
                        b.object("NSFetchIndexElementDescription", ["NSPropertyName": b.string("name"), "NSAscending": .boolean(true)]),
                        b.object("NSFetchIndexElementDescription", ["NSProperty": age, "NSAscending": .boolean(false)]),
                    ]),
                ]),
            ], className: "NSMutableArray"),
        ]
        let employeeFields: [String: PropertyListValue] = [
            "NSEntityName": b.string("Employee"), "NSSuperentity": person,
            "NSProperties": b.dictionary([("name", proxy), ("badge", badge)]),
            // One constraint of names, one of property objects (a proxy among them): both occur.
            "NSUniqueTuples": b.array([
                b.array([b.string("badge")], className: "NSMutableArray"), b.array([badge, proxy], className: "NSMutableArray"),
            ], className: "NSMutableArray"),
        ]
        let entityClass = b.classDescription("NSEntityDescription", superclasses: ["NSObject"])
        b.replace(person, with: .dictionary(personFields.merging(["$class": entityClass]) { a, _ in a }))
        b.replace(employee, with: .dictionary(employeeFields.merging(["$class": entityClass]) { a, _ in a }))
        root = b.object("NSManagedObjectModel", [
            "NSEntities": b.knownKeysDictionary([("Employee", employee), ("Person", person)]),
            "NSVersionIdentifiers": b.set([b.string("b"), b.string("a")]),
        ])
        builder = b
    }

    var data: Data { builder.data(root: root) }
}
