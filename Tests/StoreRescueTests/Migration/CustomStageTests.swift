import Foundation
import Testing
@testable import StoreRescue

/// Custom stages: steps before and after the copy (update, delete with delete rules), `map`
/// expressions over the source object, `create` with links both ways, conversion failures that
/// name the object, expression errors refused before anything runs, and Swift handlers.
@Suite struct CustomStageTests {
    typealias M = TestModel

    /// V1: Post(title, content) ←→ Tag(name) many-to-many, Post.comments cascade to Comment.
    /// V2: Post(title, summary) with the same links, plus Note(text) ←post.
    static let v1 = M.version("V1", [
        EntityDescription(name: "Comment", properties: [M.attribute("text"), M.toOne("post", "Post", inverse: "comments")]),
        EntityDescription(name: "Post", properties: [
            M.attribute("title"), M.attribute("content"), M.toMany("tags", "Tag", inverse: "posts"),
            M.toMany("comments", "Comment", inverse: "post", deleteRule: .cascade),
        ]),
        EntityDescription(name: "Tag", properties: [M.attribute("name"), M.toMany("posts", "Post", inverse: "tags")]),
    ])
    static let v2 = M.version("V2", [
        EntityDescription(name: "Comment", properties: [M.attribute("text"), M.toOne("post", "Post", inverse: "comments")]),
        EntityDescription(name: "Note", properties: [M.attribute("text"), M.attribute("length", .integer32), M.toMany("posts", "Post", inverse: "notes")]),
        EntityDescription(name: "Post", properties: [
            M.attribute("title"), M.attribute("summary", optional: false), M.toMany("tags", "Tag", inverse: "posts"),
            M.toMany("comments", "Comment", inverse: "post", deleteRule: .cascade), M.toMany("notes", "Note", inverse: "posts"),
        ]),
        EntityDescription(name: "Tag", properties: [M.attribute("name"), M.toMany("posts", "Post", inverse: "tags")]),
    ])

    private func fixture(_ custom: CustomStageDefinition) throws -> (MigrationFixture, String) {
        let stages = [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")]
        let fixture = try MigrationFixture(versions: [Self.v1, Self.v2], stages: stages)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            try context.insert("Post", values: ["title": .text("  First  "), "content": .text("The first post, with a long body")])
            try context.insert("Post", values: ["title": .text("Second"), "content": .text("short")])
            try context.insert("Post", values: ["title": .text("Draft"), "content": .null])
            for name in ["swift", "", "sql"] { try context.insert("Tag", values: ["name": .text(name)]) }
            try context.link("Post", key: 1, "tags", to: 1)
            try context.link("Post", key: 1, "tags", to: 2)
            try context.link("Post", key: 3, "tags", to: 3)
            for (text, post) in [("nice", 1), ("meh", 3), ("ok", 3)] {
                let key = try context.insert("Comment", values: ["text": .text(text)])
                try context.link("Comment", key: key, "post", to: Int64(post))
            }
        }
        return (fixture, path)
    }

    private static let summary = CustomStageDefinition.EntityMap(entity: "Post", assignments: [.init(property: "summary", expression: "coalesce(substr(content, 1, 10), '')")])

    private func output(_ report: MigrationReport) throws -> String {
        try #require(report.result?.path, "\(report.refusals.map(\.message)) \(report.error?.message ?? "")")
    }

    @Test func stepsMapAndCreateRunInCoreDataOrder() throws {
        let custom = CustomStageDefinition(
            willMigrate: [
                .init(entity: "Post", action: .update([.init(property: "title", expression: "trim(title)")]), condition: "title IS NOT NULL"),
                .init(entity: "Post", action: .delete, condition: "title = 'Draft'"),
            ],
            map: [Self.summary],
            create: [.init(entity: "Note", forEach: "Post", condition: "content IS NOT NULL",
                           assignments: [.init(property: "text", expression: "'about ' || title"), .init(property: "length", expression: "length(content)")],
                           linksToSource: ["posts"])],
            didMigrate: [.init(entity: "Tag", action: .delete, condition: "name = ''")])
        let (fixture, path) = try fixture(custom)
        let report = fixture.migrate(path)
        let output = try output(report)
        try fixture.expectExactLayout(output, version: "V2")
        // willMigrate ran on V1's names: titles trimmed; the draft deleted with its comments (cascade)
        // and its tag link (nullify).
        let posts = try fixture.objects(output, at: "V2", "Post")
        #expect(posts.map { $0["title"] } == [.text("First"), .text("Second")])
        #expect(posts.map { $0["summary"] } == [.text("The first "), .text("short")])
        #expect(try fixture.objects(output, at: "V2", "Comment").map { $0["text"] } == [.text("nice")])
        // create: one Note per remaining post, linked both ways through the many-to-many.
        let notes = try fixture.objects(output, at: "V2", "Note")
        #expect(notes.map { $0["text"] } == [.text("about First"), .text("about Second")])
        #expect(notes.map { $0["length"] } == [.integer(32), .integer(5)])
        #expect(try fixture.links(output, at: "V2", "Post", "notes") == [[1, notes[0].key], [2, notes[1].key]])
        // didMigrate ran on V2's names: the empty tag is gone and its link with it.
        #expect(try fixture.objects(output, at: "V2", "Tag").map { $0["name"] } == [.text("swift"), .text("sql")])
        #expect(try fixture.links(output, at: "V2", "Post", "tags") == [[1, 1]])
        #expect(report.result?.customStepRows["stages[0].willMigrate"] == [3, 3], "3 titles trimmed; the draft and its 2 comments deleted")
        #expect(report.result?.customStepRows["stages[0].didMigrate"] == [1])
        #expect(report.result?.verification.danglingLinks == 0)
    }

    @Test func denyStopsADeleteThatWouldLeaveLinks() throws {
        var v1 = Self.v1
        v1.model.entities[1].properties[3] = M.toMany("comments", "Comment", inverse: "post", deleteRule: .deny)
        let stages = [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: CustomStageDefinition(
            willMigrate: [.init(entity: "Post", action: .delete, condition: "title = 'Draft'", jsonPath: "stages[0].willMigrate[0]")],
            map: [Self.summary]), jsonPath: "stages[0]")]
        let fixture = try MigrationFixture(versions: [CatalogVersion(name: "V1", model: v1.model, origin: "inline"), Self.v2], stages: stages)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in
            let post = try context.insert("Post", values: ["title": .text("Draft")])
            let comment = try context.insert("Comment", values: ["text": .text("x")])
            try context.link("Comment", key: comment, "post", to: post)
        }
        let report = fixture.migrate(path)
        #expect(report.status == .failed && report.exitStatus == .refused)
        #expect(report.error?.message.contains("stages[0].willMigrate[0]: deleting these Post objects is denied: 1 of them still have comments") == true)
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    @Test func aValueThatDoesNotConvertStopsTheMigrationNamingTheObject() throws {
        let custom = CustomStageDefinition(
            map: [Self.summary],
            create: [.init(entity: "Note", forEach: "Post", assignments: [.init(property: "length", expression: "title")], linksToSource: ["posts"])])
        let (fixture, path) = try fixture(custom)
        // Counted and refused before anything is written (the run used to stop on the first object).
        let report = fixture.migrate(path)
        #expect(report.status == .refused && report.exitStatus == .refused && report.error == nil)
        let message = try #require(report.refusals.first?.message)
        #expect(message.contains("Note objects a value that is not an Integer 32 (for example the text \"  First  \" in the one made from the Post with Z_PK 1)"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: fixture.directory.path("out.sqlite")))
    }

    @Test func expressionsAreCheckedBeforeAnythingRuns() throws {
        for (expression, expected) in [
            ("substr(body, 1, 3)", "\"body\" is not a property here"),
            ("(SELECT 1)", "SELECT is not allowed"),
            ("title; DROP TABLE ZPOST", "\";\" is not allowed"),
            ("Post.title", "qualified name"),
            ("substr(title, ", "unbalanced"),
            ("nosuchfunction(title)", "no such function"),
        ] {
            let (fixture, path) = try fixture(CustomStageDefinition(map: [.init(entity: "Post", assignments: [
                .init(property: "summary", expression: expression, jsonPath: "stages[0].map.Post.summary"),
            ])]))
            let report = fixture.migrate(path)
            #expect(report.status == .refused, "\(expression)")
            let refusal = report.refusals.first
            #expect(refusal?.code == .invalidCustomStage, "\(expression)")
            #expect(refusal?.message.contains(expected) == true, "\(expression): \(refusal?.message ?? "")")
            #expect(refusal?.message.contains("stages[0].map.Post.summary") == true, "\(expression): \(refusal?.message ?? "")")
        }
    }

    @Test func namesThatAreNotInTheModelsAreRefused() throws {
        let (fixture, path) = try fixture(CustomStageDefinition(
            willMigrate: [.init(entity: "Ghost", action: .delete, jsonPath: "stages[0].willMigrate[0]")],
            map: [Self.summary, .init(entity: "Post", assignments: [.init(property: "nope", expression: "1", jsonPath: "stages[0].map.Post.nope")])],
            create: [.init(entity: "Note", forEach: "Post", linksToSource: ["missing"], jsonPath: "stages[0].create[0]")]))
        let report = fixture.migrate(path)
        let messages = report.refusals.map(\.message)
        #expect(messages.contains { $0.contains("stages[0].willMigrate[0]: V1 has no entity Ghost") })
        #expect(messages.contains { $0.contains("stages[0].map.Post.nope: Post at V2 has no attribute nope") })
        #expect(messages.contains { $0.contains("stages[0].create[0].link: Note has no relationship missing in V2") })
    }

    /// A `map` for an entity the destination lacks (a misspelt name) or for a new entity (no
    /// objects to map) is refused naming its JSON path: a review's `"post"` for `"Post"` was
    /// ignored, its attribute left NULL, and an invalid expression beside it never checked.
    @Test func aMapForAnEntityWithNoObjectsToMapIsRefused() throws {
        let (fixture, path) = try fixture(CustomStageDefinition(map: [
            Self.summary,
            .init(entity: "post", assignments: [.init(property: "summary", expression: "no_such_name + ;", jsonPath: "stages[0].map.post.summary")],
                  jsonPath: "stages[0].map.post"),
            .init(entity: "Note", assignments: [.init(property: "text", expression: "'x'", jsonPath: "stages[0].map.Note.text")],
                  jsonPath: "stages[0].map.Note"),
        ]))
        let report = fixture.migrate(path)
        #expect(report.status == .refused)
        let messages = report.refusals.filter { $0.code == .invalidCustomStage }.map(\.message)
        #expect(messages.contains("stages[0].map.post: V2 has no entity post"), "\(messages)")
        #expect(messages.contains("stages[0].map.Note: Note is new in V2: it has no objects from V1 to map"), "\(messages)")
        #expect(messages.count == 2, "\(messages)")
    }

    /// A `map` of an abstract entity is refused, naming its concrete subentities: its objects
    /// are theirs, each mapped under its own name, so it set nothing (a review's attribute
    /// stayed NULL with exit 0).
    @Test func aMapOfAnAbstractEntityIsRefusedNamingItsSubentities() throws {
        func zoo(_ name: String, nick: Bool) -> CatalogVersion {
            M.version(name, [
                EntityDescription(name: "Animal", isAbstract: true, properties: [M.attribute("name")] + (nick ? [M.attribute("nick")] : [])),
                EntityDescription(name: "Cat", superentityName: "Animal", properties: [M.attribute("lives", .integer16)]),
                EntityDescription(name: "Dog", superentityName: "Animal"),
            ])
        }
        let custom = CustomStageDefinition(map: [.init(
            entity: "Animal", assignments: [.init(property: "nick", expression: "upper(name)", jsonPath: "stages[0].map.Animal.nick")],
            jsonPath: "stages[0].map.Animal")])
        let stages = [CatalogStage(kind: .custom, span: .pair(from: "V1", to: "V2"), custom: custom, jsonPath: "stages[0]")]
        let fixture = try MigrationFixture(versions: [zoo("V1", nick: false), zoo("V2", nick: true)], stages: stages)
        let path = try fixture.store(at: "V1")
        try fixture.edit(path, at: "V1") { context in try context.insert("Cat", values: ["name": .text("tom")]) }
        let report = fixture.migrate(path)
        #expect(report.status == .refused)
        let refusal = report.refusals.first { $0.code == .invalidCustomStage }
        #expect(refusal?.message == "stages[0].map.Animal: Animal is abstract in V2: it has no objects of its own to map")
        #expect(refusal?.remedy == "map each of its concrete subentities under its own name: Cat, Dog")
    }

    /// `willMigrate` and `didMigrate` steps are checked before anything runs, as `map` is: an
    /// unknown name, a subquery, an aggregate. A review's steps passed the dry run and failed
    /// only when run (under `upgrade`, after its backup).
    @Test func dataStepsAreCheckedBeforeAnythingRuns() throws {
        let cases: [(CustomStageDefinition, String)] = [
            (CustomStageDefinition(
                willMigrate: [.init(entity: "Post", action: .delete, condition: "nosuch = 1", jsonPath: "stages[0].willMigrate[0]")],
                map: [Self.summary]),
             "stages[0].willMigrate[0].where: \"nosuch\" is not a property here"),
            (CustomStageDefinition(
                map: [Self.summary],
                didMigrate: [.init(entity: "Post", action: .update([.init(property: "title", expression: "count(*)", jsonPath: "stages[0].didMigrate[0].set.title")]),
                                   jsonPath: "stages[0].didMigrate[0]")]),
             "stages[0].didMigrate[0]: SQLite rejects the step: misuse of aggregate"),
            (CustomStageDefinition(
                map: [Self.summary],
                didMigrate: [.init(entity: "Post", action: .delete, condition: "(select 1)", jsonPath: "stages[0].didMigrate[0]")]),
             "stages[0].didMigrate[0].where: "),
            // A hostile catalog's fts3_tokenizer('simple') wrote a memory address into the store.
            (CustomStageDefinition(
                map: [Self.summary],
                didMigrate: [.init(entity: "Post", action: .update([.init(property: "title", expression: "hex(FTS3_Tokenizer('simple'))", jsonPath: "stages[0].didMigrate[0].set.title")]),
                                   jsonPath: "stages[0].didMigrate[0]")]),
             "stages[0].didMigrate[0].set.title: FTS3_Tokenizer() is not allowed"),
        ]
        for (custom, expected) in cases {
            let (fixture, path) = try fixture(custom)
            let report = fixture.migrate(path)
            #expect(report.status == .refused, "\(expected)")
            let refusal = report.refusals.first
            #expect(refusal?.code == .invalidCustomStage)
            #expect(refusal?.message.hasPrefix(expected) == true, "\(refusal?.message ?? "no refusal")")
            #expect(report.result == nil, "nothing written")
        }
    }

    @Test func swiftHandlersRunOnTheStoreAtTheirVersion() throws {
        let (fixture, path) = try fixture(CustomStageDefinition(map: [Self.summary]))
        let handlers = CustomStageHandlers(
            from: "V1", to: "V2",
            willMigrate: { context in
                #expect(context.version == "V1")
                try context.objects(of: "Post", where: "content IS NULL") { post in
                    try context.update("Post", key: post.key, set: ["content": .text("(empty)")])
                }
            },
            didMigrate: { context in
                #expect(context.version == "V2")
                let note = try context.insert("Note", values: ["text": .text("added by a handler"), "length": .integer(18)])
                try context.link("Note", key: note, "posts", to: 2)
                #expect(try context.delete("Comment", where: "text = 'meh'") == 1)
            })
        let report = fixture.migrate(path, handlers: [handlers])
        let output = try output(report)
        try fixture.expectExactLayout(output, version: "V2")
        #expect(try fixture.objects(output, at: "V2", "Post").map { $0["summary"] } == [.text("The first "), .text("short"), .text("(empty)")])
        let notes = try fixture.objects(output, at: "V2", "Note")
        #expect(notes.map { $0["text"] } == [.text("added by a handler")])
        #expect(try fixture.links(output, at: "V2", "Post", "notes") == [[2, notes[0].key]])
        #expect(try fixture.objects(output, at: "V2", "Comment").map { $0["text"] } == [.text("nice"), .text("ok")])
        #expect(report.result?.intermediateVersions == 2)

        let stray = fixture.migrate(path, output: "stray.sqlite", handlers: [CustomStageHandlers(from: "V2", to: "V3")])
        #expect(stray.refusals.first?.message.contains("Swift handlers are given for V2 → V3") == true)
    }
}
