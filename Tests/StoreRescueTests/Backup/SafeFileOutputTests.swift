import Foundation
import Testing
@testable import StoreRescue

@Suite struct SafeFileOutputTests {
    @Test func publishesCompleteFileWithPrivateMode() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path("out.bin")
        let output = try SafeFileOutput(destinationPath: path)
        try output.write([1, 2, 3])
        #expect(!FileManager.default.fileExists(atPath: path), "nothing at the destination before publish")
        #expect(FileManager.default.fileExists(atPath: output.temporaryPath))
        try output.publish()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data([1, 2, 3]))
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        #expect(BackupFixtures.fileNames(in: temp.url.path) == ["out.bin"])
    }

    @Test func refusesToReplaceUnlessAsked() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path("out.bin")
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        let output = try SafeFileOutput(destinationPath: path)
        try output.write(Array("new".utf8))
        #expect(throws: SafeFileOutputError.destinationExists(path: path)) { try output.publish() }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(BackupFixtures.fileNames(in: temp.url.path) == ["out.bin"], "the temporary file is removed")

        let replacing = try SafeFileOutput(destinationPath: path)
        try replacing.write(Array("new".utf8))
        try replacing.publish(replacingExisting: true)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "new")
    }

    @Test func neverWritesThroughAPlantedLink() throws {
        let temp = try TemporaryDirectory()
        let victim = temp.path("victim")
        try Data("precious".utf8).write(to: URL(fileURLWithPath: victim))
        let path = temp.path("out.bin")
        try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: victim)
        let output = try SafeFileOutput(destinationPath: path)
        try output.write(Array("evil".utf8))
        let error = #expect(throws: SafeFileOutputError.self) { try output.publish() }
        #expect(error?.description == "\(path) is a symbolic link; it was neither followed nor replaced")
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "precious")
    }

    @Test func releasingUnpublishedOutputRemovesIt() throws {
        let temp = try TemporaryDirectory()
        var temporary = ""
        do {
            let output = try SafeFileOutput(destinationPath: temp.path("out.bin"))
            try output.write([UInt8](repeating: 7, count: 10_000))
            temporary = output.temporaryPath
            #expect(FileManager.default.fileExists(atPath: temporary))
        }
        #expect(!FileManager.default.fileExists(atPath: temporary))
        #expect(BackupFixtures.fileNames(in: temp.url.path) == [])
    }

    @Test func missingFolderIsAClearError() throws {
        let temp = try TemporaryDirectory()
        let path = temp.path("no/such/out.bin")
        let error = #expect(throws: SafeFileOutputError.self) { try SafeFileOutput(destinationPath: path) }
        #expect(error?.description == "cannot create \(path): No such file or directory")
        #expect(error?.exitStatus == .cannotCreateOutput)
    }

    @Test func publishingThroughAReplacementHandsItTheDurableFile() throws {
        let temp = try TemporaryDirectory()
        let store = temp.path("s.sqlite")
        try ReplacementFixtures.newStore(at: store, marker: 1)
        let source = temp.path("source.sqlite")
        try ReplacementFixtures.newStore(at: source, marker: 2)
        let output = try SafeFileOutput(destinationPath: store)
        try output.write(Array(try Data(contentsOf: URL(fileURLWithPath: source))))
        var handed: String?
        try output.publish { temporaryPath in
            handed = temporaryPath
            try StoreReplacement(storePath: store, lockTimeout: 1).replace(with: temporaryPath)
        }
        #expect(handed == output.temporaryPath)
        #expect(try ReplacementFixtures.values(store) == [2])
        output.discard()  // published: nothing to discard
        #expect(try ReplacementFixtures.values(store) == [2])
        #expect(BackupFixtures.fileNames(in: temp.url.path) == ["s.sqlite", "source.sqlite"])
    }

    @Test func aReplacementThatThrowsLeavesNoTemporary() throws {
        struct Refused: Error {}
        let temp = try TemporaryDirectory()
        let path = temp.path("out.bin")
        try Data("old".utf8).write(to: URL(fileURLWithPath: path))
        let output = try SafeFileOutput(destinationPath: path)
        try output.write(Array("new".utf8))
        #expect(throws: Refused.self) { try output.publish { _ in throw Refused() } }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "old")
        #expect(BackupFixtures.fileNames(in: temp.url.path) == ["out.bin"], "the temporary file is removed")
    }
}
