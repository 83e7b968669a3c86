import Foundation

extension ModelArchiveDecoder {
    /// The flag bits of a property's `_P` field, as archived.
    enum PropertyFlagBit {
        static let optional: Int64 = 0x2
        static let readOnly: Int64 = 0x4
        static let transient: Int64 = 0x8
        static let ordered: Int64 = 0x400
    }

    /// The bits of an attribute's `NSFlagsKey`.
    enum AttributeFlagBit {
        static let allowsExternalBinaryDataStorage: Int64 = 0x4
        static let preservesValueInHistoryOnDeletion: Int64 = 0x10
    }

    /// The property an `NSProperties` value describes, or nil for one the model types do not hold
    /// (an inherited property's proxy, a fetched property).
    static func property(from node: KeyedArchiveNode) throws -> PropertyDescription? {
        let classes = try node.classNames()
        if classes.contains("_NSPropertyDescriptionProxy") || classes.contains("NSFetchedPropertyDescription") { return nil }
        if classes.contains("NSRelationshipDescription") { return .relationship(try relationship(from: node)) }
        if classes.contains("NSAttributeDescription") { return .attribute(try attribute(from: node)) }
        throw ModelDecodingError.malformedArchive(
            .unexpectedValue(path: node.path, expected: "an attribute or relationship description", found: node.foundDescription))
    }

    /// One flag, from `_P` when the archive has it, else from the explicit key (absent: false).
    /// When both are present they must agree.
    static func flag(_ bit: Int64, key: String, in node: KeyedArchiveNode) throws -> Bool {
        let explicit = try node.child(key)?.bool()
        guard let bits = try node.child("_P")?.integer() else { return explicit ?? false }
        let fromBits = bits & bit != 0
        if let explicit, explicit != fromBits {
            throw ModelDecodingError.invalidModel(
                path: node.path, reason: "\(key) is \(explicit ? "YES" : "NO") but the _P flags (0x\(String(bits, radix: 16))) say \(fromBits ? "YES" : "NO")")
        }
        return fromBits
    }

    static func attribute(from node: KeyedArchiveNode) throws -> AttributeDescription {
        let typeNode = try node.requiredChild("NSAttributeType")
        let code = try typeNode.integer()
        guard let type = AttributeType(rawValue: Int(code)) else {
            throw ModelDecodingError.unknownAttributeType(code: code, path: typeNode.path)
        }
        let flags = try node.child("NSFlagsKey")?.integer() ?? 0
        return AttributeDescription(
            name: try node.requiredChild("NSPropertyName").string(),
            type: type,
            isOptional: try flag(PropertyFlagBit.optional, key: "NSIsOptional", in: node),
            isTransient: try flag(PropertyFlagBit.transient, key: "NSIsTransient", in: node),
            isReadOnly: try flag(PropertyFlagBit.readOnly, key: "NSIsReadOnly", in: node),
            defaultValue: try node.child("NSDefaultValue").flatMap { try defaultValueString($0, type: type) },
            versionHashModifier: try node.child("NSVersionHashModifier")?.string(),
            renamingIdentifier: try node.child("NSRenamingIdentifier")?.string(),
            allowsExternalBinaryDataStorage: flags & AttributeFlagBit.allowsExternalBinaryDataStorage != 0,
            preservesValueInHistoryOnDeletion: flags & AttributeFlagBit.preservesValueInHistoryOnDeletion != 0,
            isIndexed: try node.child("NSIsIndexed")?.bool() ?? false,
            valueTransformerName: try node.child("NSValueTransformerName")?.string())
    }

    static func relationship(from node: KeyedArchiveNode) throws -> RelationshipDescription {
        let destination: String
        if let name = try node.child("_NSDestinationEntityName") {
            destination = try name.string()
        } else {
            destination = try node.requiredChild("NSDestinationEntity").requiredChild("NSEntityName").string()
        }
        var inverse = try node.child("_NSInverseRelationshipName")?.string()
        if inverse == nil, let inverseNode = try node.child("NSInverseRelationship") {
            inverse = try inverseNode.requiredChild("NSPropertyName").string()
        }
        let minCount = try count(node, "NSMinCount")
        let maxCount = try count(node, "NSMaxCount")
        let ruleNode = try node.child("NSDeleteRule")
        let rawRule = try ruleNode?.integer() ?? Int64(DeleteRule.nullify.rawValue)
        guard let rule = DeleteRule(rawValue: Int(truncatingIfNeeded: rawRule)), Int64(rule.rawValue) == rawRule else {
            throw ModelDecodingError.invalidModel(path: ruleNode?.path ?? node.path, reason: "delete rule \(rawRule) is not 0 to 3")
        }
        return RelationshipDescription(
            name: try node.requiredChild("NSPropertyName").string(),
            destinationEntityName: destination,
            inverseName: inverse,
            minCount: minCount,
            maxCount: maxCount,
            isToMany: maxCount != 1,
            isOrdered: try flag(PropertyFlagBit.ordered, key: "NSIsOrdered", in: node),
            isOptional: try flag(PropertyFlagBit.optional, key: "NSIsOptional", in: node),
            isTransient: try flag(PropertyFlagBit.transient, key: "NSIsTransient", in: node),
            isReadOnly: try flag(PropertyFlagBit.readOnly, key: "NSIsReadOnly", in: node),
            deleteRule: rule,
            versionHashModifier: try node.child("NSVersionHashModifier")?.string(),
            renamingIdentifier: try node.child("NSRenamingIdentifier")?.string(),
            isIndexed: try node.child("NSIsIndexed")?.bool() ?? false)
    }

    /// `NSMinCount`/`NSMaxCount`, which the version hash stores as 32-bit unsigned integers.
    static func count(_ node: KeyedArchiveNode, _ key: String) throws -> Int {
        let countNode = try node.requiredChild(key)
        let value = try countNode.integer()
        guard value >= 0, value <= Int64(UInt32.max) else {
            throw ModelDecodingError.invalidModel(path: countNode.path, reason: "\(key) \(value) is not between 0 and \(UInt32.max)")
        }
        return Int(value)
    }
}
