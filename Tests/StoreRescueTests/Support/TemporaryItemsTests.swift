import Foundation
import Testing
@testable import StoreRescue

/// Every temporary is named, locked and swept by one rule: a stale one (its owner dead, so its
/// lock free, and untouched for a while) is removed by the next run in its folder; a live one
/// (locked) or a fresh one never is.
@Suite struct TemporaryItemsTests {
    static let old = Date().addingTimeInterval(-3600)

    static func backdate(_ path: String) {
        var times = [timespec(tv_sec: Int(old.timeIntervalSince1970), tv_nsec: 0),
                     timespec(tv_sec: Int(old.timeIntervalSince1970), tv_nsec: 0)]
        _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    @Test func namesCarryTheOwnerAndAreRecognised() {
        let name = TemporaryItems.name(label: ".backup.gz", random: "k3j2h1")
        #expect(name.hasPrefix(".backup.gz.storerescue-tmp-\(getpid())-"))
        #expect(TemporaryItems.ownerProcess(ofName: name) == getpid())
        #expect(TemporaryItems.ownerProcess(ofName: "verify.storerescue-tmp-4242-20261123T101500Z-Ab12Cd") == 4242)
        for foreign in ["backup.gz", ".x.tmp-abc", "a.storerescue-tmp-12-2026-x", "a.storerescue-tmp-x-20261123T101500Z-a",
                        "a.storerescue-tmp-12-20261123T101500Z-", "a.storerescue-tmp-12-20261123T101500Z-a/b"] {
            #expect(TemporaryItems.ownerProcess(ofName: foreign) == nil, "\(foreign)")
        }
    }

    @Test func sweepRemovesOnlyStaleUnlockedItemsOfThePattern() throws {
        let dir = try TemporaryDirectory()
        let staleFile = dir.path(".s.gz.storerescue-tmp-999999-20200101T000000Z-aaaaaa")
        let staleFolder = dir.path(".snapshot.storerescue-tmp-999999-20200101T000000Z-bbbbbb")
        let lockedFile = dir.path(".l.gz.storerescue-tmp-999999-20200101T000000Z-cccccc")
        let freshFile = dir.path(".f.gz.storerescue-tmp-999999-20200101T000000Z-dddddd")
        let foreign = dir.path("notes.tmp-old")
        for file in [staleFile, lockedFile, freshFile, foreign] { #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8))) }
        try FileManager.default.createDirectory(atPath: staleFolder + "/inner", withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: staleFolder + "/inner/snapshot.sqlite", contents: Data("x".utf8)))
        let link = dir.path(".k.gz.storerescue-tmp-999999-20200101T000000Z-eeeeee")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: foreign)
        for path in [staleFile, staleFolder, lockedFile, foreign, link] { Self.backdate(path) }
        // Another open file description holding the lock: a live process's item.
        let holder = open(lockedFile, O_RDONLY)
        defer { close(holder) }
        #expect(flock(holder, LOCK_EX | LOCK_NB) == 0)

        let removed = TemporaryItems.sweep(folder: dir.url.path)
        #expect(Set(removed) == [staleFile, staleFolder])
        #expect(BackupFixtures.fileNames(in: dir.url.path) == [(foreign as NSString).lastPathComponent,
            (freshFile as NSString).lastPathComponent, (link as NSString).lastPathComponent, (lockedFile as NSString).lastPathComponent].sorted())
        #expect(TemporaryItems.removedStaleItems.contains(staleFile))
    }

    @Test func liveItemsAreLockedAndRegisteredUntilPublishedOrRemoved() throws {
        let dir = try TemporaryDirectory()
        let output = try SafeFileOutput(destinationPath: dir.path("out.bin"))
        let folder = try PrivateTemporaryDirectory(parent: dir.url.path, prefix: ".work")
        #expect(TemporaryItems.ownerProcess(ofName: (output.temporaryPath as NSString).lastPathComponent) == getpid())
        #expect(TemporaryItems.ownerProcess(ofName: (folder.path as NSString).lastPathComponent) == getpid())
        #expect(TemporaryItems.liveItems.contains(output.temporaryPath) && TemporaryItems.liveItems.contains(folder.path))
        for path in [output.temporaryPath, folder.path] {
            Self.backdate(path)
            let probe = open(path, O_RDONLY)
            #expect(flock(probe, LOCK_EX | LOCK_NB) != 0, "\(path) is locked while it lives")
            close(probe)
        }
        #expect(TemporaryItems.sweep(folder: dir.url.path).isEmpty, "a live item is never swept")
        try output.write([1, 2, 3])
        try output.publish()
        folder.remove()
        #expect(!TemporaryItems.liveItems.contains(output.temporaryPath) && !TemporaryItems.liveItems.contains(folder.path))
        #expect(BackupFixtures.fileNames(in: dir.url.path) == ["out.bin"])
    }
}
