import Foundation
import Testing
@testable import StoreRescue

@Suite struct KeyedArchiveTests {
    private func archiveError(_ plist: PropertyListValue, _ body: (KeyedArchive) throws -> Void = { _ in }) -> KeyedArchiveError? {
        #expect(throws: KeyedArchiveError.self) { try body(try KeyedArchive(plist)) }
    }

    @Test func refusesPropertyListsThatAreNotKeyedArchives() {
        #expect(archiveError(.array([])) == .notAKeyedArchive(reason: "the property list is an array, not a dictionary"))
        #expect(archiveError(.dictionary([:])) == .notAKeyedArchive(reason: "it has no $archiver key"))
        let other = archiveError(.dictionary(["$archiver": .string("NSArchiver")]))
        #expect(other?.description == "not a keyed archive: $archiver is \"NSArchiver\", not \"NSKeyedArchiver\"")
        #expect(archiveError(.dictionary(["$archiver": .string("NSKeyedArchiver"), "$objects": .array([])]))
            == .notAKeyedArchive(reason: "$objects is missing, empty or not an array"))
        #expect(archiveError(.dictionary(["$archiver": .string("NSKeyedArchiver"), "$objects": .array([.string("$null")])]))
            == .notAKeyedArchive(reason: "$top is missing or not a dictionary"))
    }

    @Test func readsCollectionsAndStrings() throws {
        var b = KeyedArchiveBuilder()
        let mutableString = b.object("NSMutableString", superclasses: ["NSString", "NSObject"], ["NS.string": .string("mutable")])
        let list = b.array([b.string("x"), mutableString, .integer(3)])
        let known = b.knownKeysDictionary([("k1", b.string("v1")), ("k2", .boolean(true))])
        let plain = b.dictionary([("a", .integer(1))])
        let root = b.object("Holder", ["list": list, "known": known, "plain": plain, "set": b.set([b.string("s")]), "nothing": .uid(0)])
        let node = try KeyedArchive(b.archive(root: root)).rootObject()
        #expect(try node.className() == "Holder")
        let elements = try node.requiredChild("list").elements()
        #expect(try elements[0].string() == "x")
        #expect(try elements[1].string() == "mutable")
        #expect(try elements[2].integer() == 3)
        #expect(elements[1].path == "$top.root.list[1]")
        let entries = try node.requiredChild("known").entries()
        #expect(entries.map(\.key) == ["k1", "k2"])
        #expect(try entries[1].value.bool() == true)
        #expect(entries[0].value.path == "$top.root.known[\"k1\"]")
        #expect(try node.requiredChild("plain").entries().map(\.key) == ["a"])
        #expect(try node.requiredChild("set").elements().map { try $0.string() } == ["s"])
        #expect(try node.child("nothing") == nil)
        #expect(try node.child("absent") == nil)
    }

    @Test func errorsNameThePath() throws {
        var b = KeyedArchiveBuilder()
        let badList = b.array([.uid(999)])
        let uneven = b.object("NSDictionary", ["NS.keys": .array([b.string("a")]), "NS.objects": .array([])])
        let root = b.object("Holder", ["bad": badList, "uneven": uneven, "number": .integer(5), "null": .uid(0)])
        let archive = try KeyedArchive(b.archive(root: root))
        let node = try archive.rootObject()

        let reference = #expect(throws: KeyedArchiveError.self) { try node.requiredChild("bad").elements() }
        #expect(reference == .invalidReference(uid: 999, objectCount: b.objects.count, path: "$top.root.bad[0]"))
        #expect(reference?.description
            == "damaged keyed archive: $top.root.bad[0] refers to object 999, but there are only \(b.objects.count) objects")

        let counts = #expect(throws: KeyedArchiveError.self) { try node.requiredChild("uneven").entries() }
        #expect(counts?.description == "damaged keyed archive: $top.root.uneven should be as many keys as values but is 1 keys and 0 values")

        let type = #expect(throws: KeyedArchiveError.self) { try node.requiredChild("number").string() }
        #expect(type == .unexpectedValue(path: "$top.root.number", expected: "a string", found: "an integer"))

        let notAList = #expect(throws: KeyedArchiveError.self) { try node.elements() }
        #expect(notAList == .unexpectedValue(path: "$top.root", expected: "an array or set", found: "an object of class Holder"))

        #expect(throws: KeyedArchiveError.missingValue(path: "$top.root.null")) { try node.requiredChild("null") }
        #expect(throws: KeyedArchiveError.missingValue(path: "$top.other")) { try archive.rootObject("other") }
    }

    @Test func referencesNeverLoop() throws {
        var b = KeyedArchiveBuilder()
        let selfReference = b.add(.uid(1))  // $objects[1] is a UID to itself
        let cyclic = b.add(.string("placeholder"))
        let holderClass = b.classDescription("Holder", superclasses: ["NSObject"])
        b.replace(cyclic, with: .dictionary(["$class": holderClass, "me": cyclic, "loop": selfReference]))
        let node = try KeyedArchive(b.archive(root: cyclic)).rootObject()
        // Following a cycle is one step at a time: as deep as the caller goes, no further.
        #expect(try node.requiredChild("me").requiredChild("me").requiredChild("me").path == "$top.root.me.me.me")
        let error = #expect(throws: KeyedArchiveError.self) { try node.child("loop") }
        #expect(error == .unexpectedValue(path: "$top.root.loop", expected: "an archived object", found: "a UID stored in $objects[1]"))
    }

    @Test func badClassReferencesAreReported() throws {
        var b = KeyedArchiveBuilder()
        let root = b.add(.dictionary(["$class": b.string("not a class description")]))
        let node = try KeyedArchive(b.archive(root: root)).rootObject()
        let error = #expect(throws: KeyedArchiveError.self) { try node.className() }
        #expect(error == .unexpectedValue(path: "$top.root.$class", expected: "a class description with $classname", found: "something else"))
    }
}
