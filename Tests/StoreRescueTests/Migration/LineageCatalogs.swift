import Foundation

/// The catalog files the shared lineages need (their stages written as each app would declare
/// them), shared by the migrate and upgrade tests.
enum LineageCatalogs {
    /// PostsRevised: V1 → V2 lightweight, V2 → V3 custom (one Section per Post), V3 → V4.
    static func postsRevised(model: String) -> String {
        """
        {"formatVersion": 1, "app": "PostsRevised", "versions": [{"xcdatamodeld": "\(model)"}],
         "stages": [
          {"kind": "lightweight", "from": "CoreDataMigration_Example", "to": "CoreDataMigration_Example 2"},
          {"kind": "custom", "from": "CoreDataMigration_Example 2", "to": "CoreDataMigration_Example 3",
           "create": [{"entity": "Section", "forEach": "Post",
                       "set": {"title": "substr(content, 1, 4) || '...'", "body": "content", "index": "0"},
                       "link": {"post": "source"}}]},
          {"kind": "lightweight", "from": "CoreDataMigration_Example 3", "to": "CoreDataMigration_Example 4"}]}
        """
    }

    /// Employees: the required `name` split into `firstName` and `lastName` by a custom stage
    /// (`map`), or — without it — a stage that is refused with 134110.
    static func employees(model: String, map: Bool) -> String {
        """
        {"formatVersion": 1, "app": "Employees", "versions": [{"xcdatamodeld": "\(model)"}], "current": "MWKCoreDataTests3",
         "stages": [{"kind": "lightweight", "versions": ["MWKCoreDataTests"]},
                    {"kind": "custom", "from": "MWKCoreDataTests2", "to": "MWKCoreDataTests3"\(map ? """
                    , "map": {"Employee": {"firstName": "substr(name, 1, instr(name, ' ') - 1)", "lastName": "substr(name, instr(name, ' ') + 1)"}}
                    """ : "")}]}
        """
    }
}
