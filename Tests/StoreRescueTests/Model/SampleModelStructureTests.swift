import Foundation
import Testing
@testable import StoreRescue

/// Exact facts about the sample models, read from their model caches.
@Suite(.enabled(if: Samples.available, "needs ../shared/samples"))
struct SampleModelStructureTests {
    @Test func netusageSkipsInheritedPropertyProxies() throws {
        let model = try SampleModels.modelCache("stores/plaso_ios_netusage.sqlite")
        #expect(model.entities.count == 18)
        #expect(model.versionIdentifiers == ["8"])
        let app = try #require(model.entity(named: "App"))
        let process = try #require(model.entity(named: "Process"))
        #expect(app.superentityName == "Process")
        #expect(app.className == "SFApp")
        let inherited: Set = ["timeStamp", "hasLiveUsage", "procName", "hintLiveUsage", "bundleName", "firstTimeStamp"]
        #expect(Set(process.properties.map(\.name)) == inherited)
        #expect(Set(app.properties.map(\.name))
            == ["hasAppExperience", "hasAppRun", "hintCalendarUsage", "hasTypicalUsage", "hasAppDomainUsage", "hasCalendarUsage"])
        let all = model.allProperties(of: app).map(\.name)
        #expect(all.count == 12)
        #expect(Set(all.prefix(6)) == inherited)

        let experience = try #require(app.relationships.first { $0.name == "hasAppExperience" })
        #expect(experience == RelationshipDescription(
            name: "hasAppExperience", destinationEntityName: "AppExperience", inverseName: "hasApp", minCount: 0, maxCount: 0,
            isToMany: true, isOrdered: false, isOptional: true, deleteRule: .cascade, renamingIdentifier: "hasAppExperience"))
        #expect(app.relationships.first { $0.name == "hasTypicalUsage" }?.isOrdered == true)
        #expect(app.relationships.first { $0.name == "hintCalendarUsage" }?.isTransient == true)
        #expect(process.relationships.first { $0.name == "hintLiveUsage" }?.isTransient == true)
        let timeStamp = try #require(process.attributes.first { $0.name == "timeStamp" })
        #expect(timeStamp.type == .date && timeStamp.isOptional && !timeStamp.isTransient && timeStamp.defaultValue == nil)
    }

    @Test func knowledgeCHasAnAbstractRootWithConstraintsAndIndexes() throws {
        let model = try SampleModels.modelCache("stores/plaso_macos_knowledgec-10.14.db")
        let object = try #require(model.entity(named: "Object"))
        #expect(object.isAbstract)
        #expect(model.subentities(of: "Object").map(\.name) == ["Category", "Event", "Identifier", "Quantity", "Relation"])
        #expect(model.entities.filter(\.isAbstract).map(\.name) == ["Object"])
        #expect(object.uniquenessConstraints == [["uuid"]])
        #expect(object.fetchIndexes == [FetchIndexDescription(name: "uuidIndex", elements: [.init(propertyName: "uuid"), .init(propertyName: "uuidHash")])])
        #expect(model.entity(named: "KeyValue")?.uniquenessConstraints == [["domain", "key"]])
        let uuid = try #require(object.attributes.first { $0.name == "uuid" })
        #expect(uuid.preservesValueInHistoryOnDeletion && !uuid.allowsExternalBinaryDataStorage)
        #expect(model.entity(named: "Event")?.fetchIndexes.map(\.name).sorted()
            == ["byEndDateIndex", "byStartDateIndex", "byStreamNameIndex", "byValueStringIndex", "compoundIndex", "compoundIndex1"])
    }

    @Test func screenTimeSubentitiesOverrideParentProperties() throws {
        let model = try SampleModels.modelCache("stores/plaso_ios_RMAdminStore-Local.sqlite")
        #expect(model.entities.count == 31)
        #expect(Set(model.entities.filter(\.isAbstract).map(\.name)) == ["CoreOrganization", "CoreOrganizationSettings"])
        // Subentities here redeclare the parent's properties as their own objects (overrides).
        let family = try #require(model.entity(named: "FamilyOrganizationSettings"))
        let core = try #require(model.entity(named: "CoreOrganizationSettings"))
        #expect(family.superentityName == "CoreOrganizationSettings")
        #expect(family.properties.contains { $0.name == "sortKey" } && core.properties.contains { $0.name == "sortKey" })
        let transformable = model.entity(named: "Blueprint")?.attributes.first { $0.name == "versionVector" }
        #expect(transformable?.type == .transformable)
        #expect(transformable?.valueTransformerName == "NSSecureUnarchiveFromData")
    }

    @Test func cartKitSwiftDataHasUniqueIDsAndNoClassNames() throws {
        let model = try SampleModels.modelCache("stores/swiftdata_CartKitSwiftData_v1.sqlite")
        #expect(model.entities.map(\.name) == ["CartItemModel", "CartItemModifierModel", "CartModel"])
        for entity in model.entities {
            #expect(entity.uniquenessConstraints == [["id"]], "\(entity.name)")
            #expect(entity.className == nil, "\(entity.name)")
        }
        #expect(model.versionIdentifiers == ["1.0.0"])
    }

    @Test func cartKitCoreDataDecimalDefaults() throws {
        let model = try SampleModels.modelCache("stores/coredata_CartKit_CartStorage_v1.sqlite")
        let amount = model.entity(named: "CDCart")?.attributes.first { $0.name == "minSubtotalAmount" }
        #expect(amount?.type == .decimal)
        #expect(amount?.defaultValue == "0")
        #expect(model.versionIdentifiers == [""])
    }

    @Test func syncMetadataV3HasFetchIndexesAndAnIndexedKey() throws {
        let model = try SampleModels.modelCache("lineages/SyncMetadata/SyncMetadata_V3.sqlite")
        let settings = try #require(model.entity(named: "SyncableSettingsMetadata"))
        // The model compiler adds an index named after the indexed property beside "byKey".
        #expect(settings.fetchIndexes.sorted { $0.name < $1.name } == [
            FetchIndexDescription(name: "byKey", elements: [.init(propertyName: "key", isAscending: true)]),
            FetchIndexDescription(name: "key", elements: [.init(propertyName: "key", isAscending: true)]),
        ])
        #expect(settings.uniquenessConstraints == [["key"]])
        let key = try #require(settings.attributes.first { $0.name == "key" })
        #expect(key.isIndexed && !key.isOptional && key.type == .string)
        #expect(model.entity(named: "SyncFeatureEntity")?.fetchIndexes.map(\.name).sorted() == ["byName", "name"])
    }

    @Test func defaultValuesRenderAsStrings() throws {
        let resources = try SampleModels.modelCache("stores/swiftdata_ResourcesManager_a14090c_default.store")
        let id = resources.entity(named: "Component")?.attributes.first { $0.name == "id" }
        #expect(id?.type == .uuid)
        #expect(id?.defaultValue == "1B9FD00D-CB92-46CD-8711-5297025B7822")
        let accounts = try SampleModels.modelCache("stores/plaso_ios_Accounts3.sqlite")
        #expect(accounts.entity(named: "AccountType")?.attributes.first { $0.name == "owningBundleID" }?.defaultValue == "com.apple.accountsd")
        #expect(accounts.versionIdentifiers == ["25"])
        let messenger = try SampleModels.modelCache("stores/plaso_ios_IMODb2.sqlite")
        #expect(messenger.versionIdentifiers == ["v4"])
        let event = try SampleModels.modelCache("stores/plaso_macos_knowledgec-10.14.db").entity(named: "Event")
        let defaults = Dictionary(uniqueKeysWithValues: (event?.attributes ?? []).map { ($0.name, $0.defaultValue) })
        #expect(defaults["hasCustomMetadata"] == "NO")  // Boolean archived as the integer 0
        #expect(defaults["valueDouble"] == "0.0")
        #expect(defaults["valueInteger"] == "0")
        #expect(defaults["streamName"] == .some(nil))
    }
}
