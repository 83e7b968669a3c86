import Foundation
import Testing
@testable import StoreRescue

/// Required values a store already lacked before it was migrated (Core Data validates only at
/// save, so a store can hold them on disk) are carried and reported, never a failed check; gaps
/// the migration makes still stop it; the analysis's 134110 refusals are as they were.
@Suite struct PreexistingGapMigrationTests {
    typealias M = TestModel
    typealias Gap = MigrationVerifier.PreexistingGap

    /// Customer(name) ←→ Order(code) with a required to-one `Order.customer`; `V2` adds an
    /// optional `Order.note` and, when asked, `orderExtras`.
    static func shop(_ name: String, orderExtras: [PropertyDescription] = [], customersNeedOrders: Bool = false) -> CatalogVersion {
        M.version(name, [
            EntityDescription(name: "Customer", properties: [
                M.attribute("name", optional: false), M.toMany("orders", "Order", inverse: "customer", optional: !customersNeedOrders),
            ]),
            EntityDescription(name: "Order", properties: [
                M.attribute("code", optional: false), M.toOne("customer", "Customer", inverse: "orders", optional: false),
            ] + orderExtras),
        ])
    }

    static let v1 = shop("V1")
    static let v2 = shop("V2", orderExtras: [M.attribute("note")])

    private func stage(_ custom: CustomStageDefinition) -> [CatalogStage] {
        [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")]
    }

    /// A V1 store: Ann (orders 1, 2), Bob (order 3) and `orders` without a customer.
    private func store(_ fixture: MigrationFixture, ordersWithoutCustomer: Int = 2, nullCodes: Int = 0, nullNames: Int = 0) throws -> String {
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            let ann = try context.insert("Customer", values: ["name": nullNames > 0 ? .null : .text("Ann")])
            let bob = try context.insert("Customer", values: ["name": .text("Bob")])
            for (index, customer) in [ann, ann, bob].enumerated() {
                let key = try context.insert("Order", values: ["code": index < nullCodes ? .null : .text("O\(index)")])
                try context.link("Order", key: key, "customer", to: customer)
            }
            for index in 0..<ordersWithoutCustomer { try context.insert("Order", values: ["code": .text("loose \(index)")]) }
        }
        return path
    }

    private func output(_ report: MigrationReport) throws -> String {
        try #require(report.result?.path, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
    }

    @Test func ordersThatAlreadyHadNoCustomerAreCarriedAndReported() throws {
        let fixture = try MigrationFixture(versions: [Self.v1, Self.v2])
        let path = try store(fixture, ordersWithoutCustomer: 2)
        let report = fixture.migrate(path)
        let out = try output(report)
        #expect(report.status == .migrated && report.exitStatus == .success)
        let verification = try #require(report.result?.verification)
        #expect(verification.problems == [])
        #expect(verification.missingRequiredValues == 0)
        #expect(verification.preexistingMissingValues == [Gap(entity: "Order", property: "customer", kind: "relationship", objects: 2, objectsBefore: 2)])
        #expect(report.renderText().contains(
            "2 Order objects already had no customer before the migration (a required relationship); carried as they were"))
        // Carried as they were: the same three links, the two loose orders still without one.
        #expect(try fixture.links(out, at: "V2", "Order", "customer") == [[1, 1], [2, 1], [3, 2]])
        #expect(try fixture.objects(out, at: "V2", "Order").count == 5)
        try fixture.expectExactLayout(out, version: "V2")
    }

    @Test func requiredAttributesThatWereAlreadyNullAreCarriedAndReported() throws {
        let fixture = try MigrationFixture(versions: [Self.v1, Self.v2])
        let path = try store(fixture, ordersWithoutCustomer: 0, nullCodes: 2, nullNames: 1)
        let report = fixture.migrate(path)
        let out = try output(report)
        #expect(report.exitStatus == .success)
        let verification = try #require(report.result?.verification)
        #expect(verification.missingRequiredValues == 0 && verification.problems == [])
        #expect(Set(verification.preexistingMissingValues.map(\.summary)) == [
            "1 Customer objects already had no name before the migration (a required attribute); carried as they were",
            "2 Order objects already had no code before the migration (a required attribute); carried as they were",
        ])
        let codes = try fixture.objects(out, at: "V2", "Order").sorted { $0.key < $1.key }.map { $0["code"] ?? .null }
        #expect(codes == [.null, .null, .text("O2")])
    }

    /// A link naming no object is no value: the migration clears it (counted) and the order is
    /// reported as one that already had no customer.
    @Test func aLinkNamingNoObjectCountsAsAlreadyMissing() throws {
        let fixture = try MigrationFixture(versions: [Self.v1, Self.v2])
        let path = try store(fixture, ordersWithoutCustomer: 0)
        // No API makes a dangling link: point order 3's customer at a key no customer has.
        let layout = try StoreLayoutBuilder.layout(for: Self.v1.model)
        let column = try #require(layout.propertyColumns["Order"]?["customer"])
        let table = try #require(layout.table(ofEntity: "Order", in: Self.v1.model)?.name)
        try SQLiteConnection(path: path, options: SQLiteOpenOptions(mode: .readWrite))
            .execute("UPDATE \(table.quotedSQLIdentifier) SET \(column.quotedSQLIdentifier) = 99 WHERE Z_PK = 3")
        let report = fixture.migrate(path)
        _ = try output(report)
        #expect(report.result?.clearedLinks["Order.customer"] == 1)
        #expect(report.result?.verification.preexistingMissingValues == [
            Gap(entity: "Order", property: "customer", kind: "relationship", objects: 1, objectsBefore: 1),
        ])
    }

    /// The inverse side: a required to-many the store left empty.
    @Test func aCustomerThatAlreadyHadNoOrdersIsCarried() throws {
        let fixture = try MigrationFixture(versions: [
            Self.shop("V1", customersNeedOrders: true), Self.shop("V2", orderExtras: [M.attribute("note")], customersNeedOrders: true),
        ])
        let path = try store(fixture, ordersWithoutCustomer: 0)
        try fixture.edit(path, at: "V1") { context in try context.insert("Customer", values: ["name": .text("Cy")]) }
        let report = fixture.migrate(path)
        _ = try output(report)
        #expect(report.result?.verification.preexistingMissingValues == [
            Gap(entity: "Customer", property: "orders", kind: "relationship", objects: 1, objectsBefore: 1),
        ])
    }

    /// Gaps follow renames through every hop and are named as the target names them.
    @Test func gapsAreNamedAsTheTargetNamesThemAfterRenames() throws {
        let v3 = M.version("V3", [
            EntityDescription(name: "Customer", properties: [
                M.attribute("name", optional: false), M.toMany("purchases", "Purchase", inverse: "buyer", renamedFrom: "orders"),
            ]),
            EntityDescription(name: "Purchase", renamingIdentifier: "Order", properties: [
                M.attribute("reference", optional: false, renamedFrom: "code"),
                M.toOne("buyer", "Customer", inverse: "purchases", optional: false, renamedFrom: "customer"), M.attribute("note"),
            ]),
        ])
        let stages = [CatalogStage(from: "V1", to: "V2", kind: .lightweight), CatalogStage(from: "V2", to: "V3", kind: .lightweight)]
        let fixture = try MigrationFixture(versions: [Self.v1, Self.v2, v3], stages: stages)
        let path = try store(fixture, ordersWithoutCustomer: 3, nullCodes: 1)
        let report = fixture.migrate(path)
        let out = try output(report)
        #expect(report.hops.count == 2)
        #expect(Set(report.result?.verification.preexistingMissingValues ?? []) == [
            Gap(entity: "Purchase", property: "buyer", kind: "relationship", objects: 3, objectsBefore: 3),
            Gap(entity: "Purchase", property: "reference", kind: "attribute", objects: 1, objectsBefore: 1),
        ])
        #expect(try fixture.links(out, at: "V3", "Purchase", "buyer") == [[1, 1], [2, 1], [3, 2]])
    }

    // MARK: - What the migration makes still fails

    /// A didMigrate step deletes Bob (nullify): his order loses its required customer. Two
    /// orders had none before; three have none after: the migration's doing, not the store's —
    /// the catalog step's, which ran: refused (3), naming the stage, not "report a bug" (70).
    @Test func aGapTheMigrationWidensStillFailsTheCheck() throws {
        let custom = CustomStageDefinition(didMigrate: [.init(entity: "Customer", action: .delete, condition: "name = 'Bob'")])
        let fixture = try MigrationFixture(versions: [Self.v1, Self.v2], stages: stage(custom))
        let path = try store(fixture, ordersWithoutCustomer: 2)
        let report = fixture.migrate(path)
        #expect(report.exitStatus == .refused)
        #expect(report.result == nil)
        #expect(report.error?.message.contains(
            "after the custom stage ") == true && report.error?.message.contains(
            ", 3 Order objects have no value for the required customer, against 2 before the migration; nothing was written") == true,
            "\(report.error?.message ?? "")")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    /// A value a custom stage computes had no value to lack before: a NULL its `map` makes for
    /// a required attribute still stops the migration (the writer names the object, exit 3),
    /// even where the source attribute was NULL too.
    @Test func aRequiredValueAMapLeavesNullIsStillStopped() throws {
        let map = CustomStageDefinition.EntityMap(entity: "Order", assignments: [.init(property: "code", expression: "nullif(code, 'O2')")])
        let fixture = try MigrationFixture(versions: [Self.v1, Self.v2], stages: stage(CustomStageDefinition(map: [map])))
        let path = try store(fixture, ordersWithoutCustomer: 0, nullCodes: 1)
        let report = fixture.migrate(path)
        #expect(report.exitStatus == .refused && report.result == nil)
        let message = try #require(report.error?.message)
        #expect(message.contains("Order.code of the object with Z_PK ") && message.contains(" is NULL, and code is required"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    // MARK: - The analysis refuses as before

    /// A new required attribute with no default is still refused before anything is written
    /// (134110, counting every row), whatever the store already lacked.
    @Test func aNewRequiredAttributeWithNoValueIsStillRefusedWith134110() throws {
        let v2 = Self.shop("V2", orderExtras: [M.attribute("total", .integer32, optional: false)])
        let fixture = try MigrationFixture(versions: [Self.v1, v2])
        let path = try store(fixture, ordersWithoutCustomer: 2, nullCodes: 1)
        let report = fixture.migrate(path)
        #expect(report.status == .refused && report.exitStatus == .refused)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.coreDataErrorCode == 134110 && refusal.code == .mandatoryValueMissing)
        #expect(refusal.entity == "Order" && refusal.property == "total" && refusal.rowCount == 5)
        #expect(report.refusals.count == 1)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    /// An optional attribute that becomes required with NULLs and no default: refused, counting
    /// the NULLs, as before.
    @Test func anAttributeBecomingRequiredOverNullsIsStillRefusedWith134110() throws {
        let v1 = Self.shop("V1", orderExtras: [M.attribute("note")])
        let v2 = Self.shop("V2", orderExtras: [M.attribute("note", optional: false)])
        let fixture = try MigrationFixture(versions: [v1, v2])
        let path = try store(fixture, ordersWithoutCustomer: 1)
        try fixture.edit(path, at: "V1") { context in _ = try context.update("Order", set: ["note": .text("kept")], where: "code = 'O0'") }
        let report = fixture.migrate(path)
        #expect(report.status == .refused)
        let refusal = try #require(report.refusals.first)
        #expect(refusal.coreDataErrorCode == 134110 && refusal.property == "note" && refusal.rowCount == 3)
        #expect(refusal.message.contains("now required, and 3 Order rows have no value for it"))
    }
}
