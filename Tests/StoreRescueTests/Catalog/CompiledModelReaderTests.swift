import Foundation
import Testing
@testable import StoreRescue

/// Compiled models: both sample `.momd` folders load; a damaged one fails naming the version and entity.
struct CompiledModelReaderTests {
    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func sampleMomdFoldersLoad() throws {
        let directory = try TemporaryDirectory()
        let model = try CompiledModelReader.readBundle(at: try directory.copySampleItem("models/Model.momd"))
        #expect(model.name == "Model")
        #expect(model.versions.map(\.name) == ["Model"])
        #expect(model.versions[0].model.entities.map(\.name) == ["User"])
        #expect(model.versions[0].origin == "mom")
        #expect(model.currentVersionName == nil && model.latest?.name == "Model")

        let dvia = try CompiledModelReader.readBundle(at: try directory.copySampleItem("models/DVIA_v2.momd"))
        #expect(dvia.versions.map(\.name) == ["DVIA_v2"])
        #expect(dvia.versions[0].model.entities.isEmpty)
        #expect(dvia.versions[0].versionHashes.isEmpty)
        #expect(dvia.currentVersionName == "DVIA_v2")
        // The checksum of no entity at all is SHA-256 of nothing.
        #expect(dvia.versions[0].versionChecksum == "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    }

    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func singleMomAndLoaderDetection() throws {
        let directory = try TemporaryDirectory()
        let folder = try directory.copySampleItem("models/Model.momd")
        let single = try Catalog.load(path: folder + "/Model.mom")
        #expect(single.versions.map(\.name) == ["Model"])
        #expect(single.versions[0].model.entities.map(\.name) == ["User"])
        // A .mom without its extension is recognised by its bplist00 header.
        try FileManager.default.copyItem(atPath: folder + "/Model.mom", toPath: directory.path("model-blob"))
        #expect(try Catalog.load(path: directory.path("model-blob")).versions[0].versionHashes == single.versions[0].versionHashes)
    }

    /// A `.momd` whose VersionInfo.plist lists `hashes` for version "App", around the sample's Model.mom.
    static func damagedMomd(hashes: [String: PropertyListValue], in directory: TemporaryDirectory) throws -> String {
        let source = try directory.copySampleItem("models/Model.momd")
        let folder = directory.path("App.momd")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: source + "/Model.mom", toPath: folder + "/App.mom")
        let info = PropertyListValue.dictionary(["NSManagedObjectModel_VersionHashes": .dictionary(["App": .dictionary(hashes)])])
        try BinaryPropertyListEncoder.encode(info).write(to: URL(fileURLWithPath: folder + "/VersionInfo.plist"))
        return folder
    }

    @Test(.enabled(if: Samples.available, "needs ../shared/samples")) func hashMismatchNamesVersionAndEntity() throws {
        let directory = try TemporaryDirectory()
        let wrong = try Self.damagedMomd(hashes: ["User": .data(Data(repeating: 0xAB, count: 32))], in: directory)
        let error = #expect(throws: CompiledModelError.self) { try CompiledModelReader.readBundle(at: wrong) }
        #expect(error?.description.hasPrefix("\(wrong)/VersionInfo.plist: version \"App\" entity \"User\": VersionInfo.plist lists hash q6ur") == true)
        #expect(error?.description.contains(", the .mom gives 14jNCFxTA5dBb7UdWt9QPSZOc2wtIaFj+25mhk+yEF4=") == true)

        let other = try TemporaryDirectory()
        let extra = try Self.damagedMomd(hashes: [:], in: other)
        let missingEntity = #expect(throws: CompiledModelError.self) { try CompiledModelReader.readBundle(at: extra) }
        #expect(missingEntity?.description.hasSuffix("version \"App\" entity \"User\": in the .mom but not listed in VersionInfo.plist") == true)
    }

    @Test func missingAndMalformedPartsAreNamed() throws {
        let directory = try TemporaryDirectory()
        let folder = directory.path("Broken.momd")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let noInfo = #expect(throws: CompiledModelError.self) { try CompiledModelReader.readBundle(at: folder) }
        #expect(noInfo?.description == "\(folder)/VersionInfo.plist: no such file: a .momd folder always has a VersionInfo.plist")
        #expect(noInfo?.exitStatus == .noInput)

        let info = PropertyListValue.dictionary(["NSManagedObjectModel_VersionHashes": .dictionary(["Broken 2": .dictionary([:])])])
        try BinaryPropertyListEncoder.encode(info).write(to: URL(fileURLWithPath: folder + "/VersionInfo.plist"))
        let noMom = #expect(throws: CompiledModelError.self) { try CompiledModelReader.readBundle(at: folder) }
        #expect(noMom == .missingVersionFile(path: folder, version: "Broken 2"))
        #expect(noMom?.description == "\(folder): VersionInfo.plist lists version \"Broken 2\" but Broken 2.mom is not in the folder")

        try Data("not a plist".utf8).write(to: URL(fileURLWithPath: folder + "/Broken 2.mom"))
        let badMom = #expect(throws: CompiledModelError.self) { try CompiledModelReader.readBundle(at: folder) }
        #expect(badMom?.description.hasPrefix("\(folder)/Broken 2.mom: cannot read the model archive:") == true)

        try Data("garbage".utf8).write(to: URL(fileURLWithPath: folder + "/VersionInfo.plist"))
        let badInfo = #expect(throws: CompiledModelError.self) { try CompiledModelReader.readBundle(at: folder) }
        #expect(badInfo?.description.hasPrefix("\(folder)/VersionInfo.plist: not a usable VersionInfo.plist:") == true)
    }
}
