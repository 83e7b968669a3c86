import Foundation
import Testing
@testable import StoreRescue

@Suite struct DataEvidenceTests {
    /// An abstract `Account` with sibling subentities `Cloud` and `Local`, each declaring a
    /// required `code`: Core Data stores them in `ZCODE` (Cloud, numbered first) and `ZCODE1` (Local).
    static let model = ManagedObjectModel(entities: [
        EntityDescription(name: "Account", isAbstract: true, properties: [.attribute(AttributeDescription(name: "name", type: .string))]),
        EntityDescription(name: "Cloud", superentityName: "Account", properties: [.attribute(AttributeDescription(name: "code", type: .string, isOptional: false))]),
        EntityDescription(name: "Local", superentityName: "Account", properties: [.attribute(AttributeDescription(name: "code", type: .string, isOptional: false))]),
    ])

    @Test func nullsAreLookedForInTheColumnTheLayoutGivesEachSibling() throws {
        let layout = try StoreLayoutBuilder.layout(for: Self.model)
        #expect(layout.propertyColumns["Cloud"]?["code"] == "ZCODE")
        #expect(layout.propertyColumns["Local"]?["code"] == "ZCODE1")

        let dir = try TemporaryDirectory()
        let path = dir.path("accounts.sqlite")
        try StoreCreator.create(model: Self.model, versionIdentifiers: nil, at: path)
        let local = try #require(layout.entityNumbers.first { $0.name == "Local" }?.ent)
        // A Local row with no code; ZCODE (Cloud's column) holds a value that must not be mistaken for it.
        try StoreFixtureBuilder.run(path, "INSERT INTO ZACCOUNT (Z_PK, Z_ENT, Z_OPT, ZCODE, ZCODE1) VALUES (1, ?, 1, 'not Local''s', NULL)", [.integer(Int64(local))])

        let store = try OpenedStore(path: path)
        let readout = StoreInspector.read(store: store)
        let version = CatalogVersion(name: "V1", model: Self.model, origin: "inline")
        let problems = DataEvidence.nullsInRequiredColumns(version: version, layout: layout, readout: readout, connection: store.connection)
        #expect(problems.map(\.column) == ["ZCODE1"])
        #expect(problems.first?.entity == "Local")
        #expect(problems.first?.detail == "1 Local rows have no value for code, which V1 requires")
        let localEntity = try #require(Self.model.entity(named: "Local"))
        #expect(DataEvidence.rowCount(of: localEntity, in: Self.model, layout: layout, readout: readout, connection: store.connection) == 1)
    }
}
