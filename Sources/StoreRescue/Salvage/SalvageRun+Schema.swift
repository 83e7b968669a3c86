import Foundation

/// Pass 1: what tables the store has, and (Core Data mode) which version it was.
extension SalvageRun {
    func readFreelist() {
        guard let first = geometry.firstFreelistTrunk, first != 0, let count = geometry.freelistPageCount else { return }
        let list = FreelistReader.read(source: source, firstTrunk: first, declaredCount: count, capacity: capacity)
        freeTrunks = list.trunkPages
        freeLeaves = list.leafPages
        if let issue = list.issue { notes.append("freelist: \(issue)") }
    }

    /// Pointer maps exist when the header says auto-vacuum, or — header gone — page 2 reads as one.
    func locatePointerMap() {
        let present = geometry.isAutoVacuum ?? PointerMap.looksPresent(in: source, usableSize: geometry.usableSize)
        guard present else { return }
        pointerMap = PointerMap(usableSize: geometry.usableSize, pageSize: geometry.pageSize, pageCount: source.pageCount)
        if geometry.isAutoVacuum == nil { notes.append("pointer-map pages found although the header is unreadable") }
    }

    /// `sqlite_schema` from page 1's tree; when the tree is broken anywhere, from every leaf page
    /// that holds schema rows, too.
    func readSchema() throws {
        let schemaTally = try walkTree(root: 1, owner: .schema)
        schemaFromTree = !schemaEntries.isEmpty && schemaTally.pagesDamaged == 0 && schemaTally.pagesMissing == 0
        if !schemaFromTree {
            notes.append(schemaEntries.isEmpty
                ? "page 1's schema tree is unreadable: schema rows were looked for on every page"
                : "page 1's schema tree is damaged: more schema rows were looked for on every page")
            try findSchemaAndBookkeepingPages()
        }
    }

    /// Reads every leaf page for schema rows (claimed as schema pages) and, in Core Data mode,
    /// Core Data's own rows (metadata, model cache: what tells the version).
    private func findSchemaAndBookkeepingPages() throws {
        let bookkeepingTables = options.catalog == nil ? [] : bookkeepingMatcher.tables
        for page in UInt32(1)...capacity {
            if page % 64 == 0 { try checkCancellation() }
            guard !treePages.contains(page), !freeTrunks.contains(page), !freeLeaves.contains(page),
                pointerMap?.isMapPage(page) != true, source.read(page, into: &pageBuffer)
            else { continue }
            let header = pageBuffer.withUnsafeBytes { BTreePageHeader(page: $0, pageNumber: page, usableSize: geometry.usableSize) }
            guard let header, header.kind == .tableLeaf else { continue }
            let shapes = recordShapes(header: header, page: page)
            if shapes.isSchema {
                treePages.insert(page)
                _ = try processLeaf(page: page, header: header, owner: .schema, provenance: .tree)
            } else if !bookkeepingTables.isEmpty, let index = bookkeepingMatcher.identify(shapes.shapes),
                let table = BookkeepingRows.Table(rawValue: bookkeepingTables[index].name)
            {
                _ = try processLeaf(page: page, header: header, owner: .bookkeeping(table), provenance: .orphan)
            }
        }
    }

    /// Table definitions: from the schema when it was read (annotated with entity numbers in Core
    /// Data mode), else — Core Data mode — from the version's layout.
    func defineTables(coreData: Bool) throws {
        guard !schemaEntries.isEmpty else { return }
        let parser = try TableDefinitionParser()
        var names = Set<String>()
        for entry in schemaEntries where entry.type == "table" {
            guard names.insert(entry.name.uppercased()).inserted else { continue }
            guard entry.rootPage > 0, let sql = entry.sql else {
                if entry.rootPage == 0 { notes.append("table \(entry.name) is a virtual table: it has no pages of its own") }
                continue
            }
            if entry.name.lowercased() == TableDefinition.sequenceTableName {
                tables.append(.sequenceTable(rootPage: entry.rootPage))
                continue
            }
            // SQLite reads a statement's text up to its first NUL: a name holding one (damage,
            // or a hostile file) could not be written into the new store as it is.
            let name = Self.writable(entry.name.replacingLiterally("\u{0}", with: "\u{FFFD}"))
            guard var definition = parser.parse(name: name, sql: sql, rootPage: entry.rootPage) else {
                notes.append("table \(name): its CREATE TABLE statement cannot be read; its rows count as lost and found")
                continue
            }
            if name != entry.name {
                notes.append("table \(name): its name holds NUL characters or noncharacters, written as U+FFFD")
            }
            for index in definition.columns.indices {
                let column = definition.columns[index]
                definition.columns[index].name = Self.writable(column.name)
                definition.columns[index].declaredType = Self.writable(column.declaredType)
                if definition.columns[index].name != column.name {
                    notes.append("table \(name): the name of its column \(index + 1) holds noncharacters, written as U+FFFD")
                }
            }
            tables.append(definition)
        }
        assumeSequenceTable()
    }

    /// `text` with U+FFFE and U+FFFF as U+FFFD: SQLite turns them into U+FFFD when it converts
    /// text to UTF-16, so in a UTF-16 store a table made with a column so named has another
    /// name than the one its rows are then inserted by (a review's damaged schema row ended the
    /// whole salvage, exit 74, "no column named z\u{FFFF}REAL").
    static func writable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value == 0xFFFE || $0.value == 0xFFFF }) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value == 0xFFFE || $0.value == 0xFFFF ? "\u{FFFD}" : $0 }))
    }

    /// `sqlite_sequence` when the schema has `AUTOINCREMENT` tables but lost its row: SQLite made
    /// it with the first such table and never drops it, so its pages are somewhere in the file.
    /// Known, its orphan leaves are taken by the names their rows hold (`isSequenceLeaf`);
    /// unknown, they went by shape into a user table shaped (text, integer), as rows it never
    /// had, and every counter fell to its table's largest recovered rowid.
    private func assumeSequenceTable() {
        let autoincrement = tables.filter(\.isAutoincrement).count
        guard autoincrement > 0, !tables.contains(where: { $0.name.lowercased() == TableDefinition.sequenceTableName }) else { return }
        tables.append(.sequenceTable(rootPage: nil))
        notes.append(
            "sqlite_sequence: its schema row is lost; assumed, as its \(autoincrement) AUTOINCREMENT table\(autoincrement == 1 ? "" : "s") imply, "
                + "and its leaves known by the table names their rows hold")
    }

    /// The Core Data output for the version the store was, after reading its bookkeeping tables.
    func makeCoreDataOutput(catalog: Catalog, file: String) throws -> any SalvageOutput {
        for index in tables.indices {
            guard let kind = BookkeepingRows.Table(rawValue: tables[index].name.uppercased()), let root = tables[index].rootPage else { continue }
            bookkeepingPages[index] = try walkTree(root: root, owner: .bookkeeping(kind))
            walkedRoots.insert(root)
        }
        let resolution = try VersionResolver.resolve(
            catalog: catalog, requested: options.versionName,
            evidence: VersionResolver.Evidence(
                metadata: bookkeeping.storeMetadata, modelCacheHashes: bookkeeping.modelCacheHashes, schemaTables: tables),
            path: storePath)
        notes += resolution.notes
        resolvedVersion = (resolution.version.name, resolution.source)
        let schemaKnown = !tables.isEmpty
        let hasHistory = schemaKnown ? tables.contains { $0.name.uppercased() == "ATRANSACTION" } : true
        let layout = try StoreLayoutBuilder.layout(
            for: resolution.version.model, options: StoreLayoutOptions(includesPersistentHistory: hasHistory))
        let output = try CoreDataSalvageOutput(
            path: file, version: resolution.version, layout: layout, metadata: bookkeeping.storeMetadata,
            historyIsProvisional: !schemaKnown, textEncoding: geometry.textEncoding, cancellation: cancellation)
        // The version's tables the schema does not name (none when it is unreadable, some when
        // part of it is): known from the layout, their root unknown, so their pages are named by
        // the shape of their rows.
        let layoutTables = layout.tables + (layout.persistentHistory?.tables ?? [])
        identifyRenamedTables(layoutTables: layoutTables, version: resolution.version.name)
        let named = Set(tables.map { $0.name.uppercased() })
        let missing = layoutTables.filter { !named.contains($0.name.uppercased()) }.map { TableDefinition(layoutTable: $0, entityNumbers: nil) }
            + (try Self.bookkeepingDefinitions()).filter { !named.contains($0.name.uppercased()) }
        tables += missing
        if !schemaKnown {
            notes.append("tables identified by the shape of their rows against version \"\(resolution.version.name)\"")
        } else if !missing.isEmpty, !schemaFromTree {
            notes.append("tables the damaged schema no longer names, known from version \"\(resolution.version.name)\": \(missing.map(\.name).joined(separator: ", "))")
        }
        for index in tables.indices {
            if let table = (layout.tables + (layout.persistentHistory?.tables ?? [])).first(where: { $0.name.uppercased() == tables[index].name.uppercased() }) {
                tables[index].entityNumbers = output.entityNumbers(of: table).flatMap { $0.isEmpty ? nil : $0 }
            }
        }
        return output
    }

    /// Core Data mode: a table of the damaged schema whose name is not one of the version's —
    /// damage in `sqlite_schema`'s name column or in the statement (`ZCUSTOMEQ` for
    /// `ZCUSTOMER`) — is the version's table with the same columns, in the same order, when
    /// exactly one table the schema does not name has them. Its tree is then read as that table's
    /// (by name it would be skipped, its pages claimed, and its rows lost); with no such table, or
    /// more than one, it stays unknown.
    func identifyRenamedTables(layoutTables: [StoreLayout.Table], version: String) {
        func columns(_ names: [String]) -> [String] { names.map { $0.uppercased() } }
        var named = Set(tables.map { $0.name.uppercased() })
        for index in tables.indices where tables[index].rootPage != nil {
            let name = tables[index].name
            guard BookkeepingRows.Table(rawValue: name.uppercased()) == nil,
                !layoutTables.contains(where: { $0.name.uppercased() == name.uppercased() })
            else { continue }
            let shape = columns(tables[index].columns.map(\.name))
            let candidates = layoutTables.filter { table in
                !named.contains(table.name.uppercased()) && columns(table.columns.map(\.name)) == shape
            }
            guard candidates.count == 1, let table = candidates.first else { continue }
            notes.append("table \(name) of the damaged schema read as \(table.name) of version \"\(version)\": it has exactly that table's columns")
            tables[index].name = table.name
            named.insert(table.name.uppercased())
        }
    }

    /// What becomes of each table's rows, and the matcher that names orphan pages.
    func assignRoles() throws {
        guard let output else { return }
        roles = try tables.map { try output.role(for: $0) }
        tallies = Array(repeating: TableTally(), count: tables.count)
        matcher = ShapeMatcher(tables: tables, isStrict: options.catalog != nil)
        let sequence = tables.firstIndex { $0.isSQLiteInternal && $0.name.lowercased() == TableDefinition.sequenceTableName }
        let counted = Set(tables.filter { $0.isAutoincrement }.map(\.name))
        sequenceLeafOwner = sequence.flatMap { counted.isEmpty ? nil : (index: $0, tables: counted) }
        bookkeeping.autoincrementTables = counted
    }

    /// `Z_PRIMARYKEY`, `Z_METADATA`, `Z_MODELCACHE` as Core Data creates them.
    static func bookkeepingDefinitions() throws -> [TableDefinition] {
        let parser = try TableDefinitionParser()
        return zip(["Z_PRIMARYKEY", "Z_METADATA", "Z_MODELCACHE"], StoreLayout.bookkeepingStatements).compactMap { name, sql in
            parser.parse(name: name, sql: sql, rootPage: 0).map { definition in
                var definition = definition
                definition.rootPage = nil
                return definition
            }
        }
    }

    /// What the page's records look like from their local bytes (enough to identify the table),
    /// and whether most of them are schema rows.
    func recordShapes(header: BTreePageHeader, page: UInt32) -> (shapes: [ShapeMatcher.Shape], isSchema: Bool) {
        var shapes: [ShapeMatcher.Shape] = []
        var schemaRows = 0
        let usable = geometry.usableSize
        var budget = CellBudget(usableSize: usable)
        pageBuffer.withUnsafeBytes { bytes in
            for index in 0..<header.cellCount {
                guard let offset = header.cellOffset(index, in: bytes), let cell = TableCell.leaf(in: bytes, at: offset, usableSize: usable) else {
                    continue
                }
                guard budget.hasRoom else { break }
                let local = UnsafeRawBufferPointer(rebasing: bytes[cell.localStart..<cell.localStart + cell.localSize])
                let decoded = RecordDecoder.decode(local, declaredSize: cell.payloadSize, into: &columns)
                budget.charge(cell, payload: local, isRecord: decoded != .malformed)
                guard decoded != .malformed else { continue }
                let second = columns.count > 1 && columns[1].isAvailable && columns[1].storageClass == .integer ? columns[1].integer(in: local) : nil
                shapes.append(ShapeMatcher.Shape(classes: columns.map(\.storageClass), secondInteger: second))
                if isSchemaRow(columns, local) { schemaRows += 1 }
            }
        }
        return (shapes, !shapes.isEmpty && schemaRows * 2 > shapes.count)
    }

    /// A `sqlite_schema` row: type (`table`, `index`, `view`, `trigger`), name, table name, root
    /// page, SQL.
    func isSchemaRow(_ record: [RecordColumn], _ payload: UnsafeRawBufferPointer) -> Bool {
        guard record.count == 5, record[0].storageClass == .text, record[1].storageClass == .text, record[2].storageClass == .text,
            record[3].storageClass == .integer || record[3].storageClass == .null,
            record[4].storageClass == .text || record[4].storageClass == .null, record[0].isAvailable
        else { return false }
        return ["table", "index", "view", "trigger"].contains(geometry.textEncoding.string(from: record[0].bytes(in: payload)))
    }

    /// Adds a schema row, the first copy of each object winning.
    func addSchemaRow(_ record: [RecordColumn], _ payload: UnsafeRawBufferPointer) {
        guard isSchemaRow(record, payload), record[1].isAvailable, record[2].isAvailable else { return }
        let encoding = geometry.textEncoding
        let root = record[3].isAvailable ? record[3].integer(in: payload) : 0
        let entry = SchemaEntry(
            type: encoding.string(from: record[0].bytes(in: payload)), name: encoding.string(from: record[1].bytes(in: payload)),
            tableName: encoding.string(from: record[2].bytes(in: payload)),
            rootPage: root > 0 && root <= Int64(UInt32.max) ? UInt32(root) : 0,
            sql: record[4].storageClass == .text && record[4].isAvailable ? encoding.string(from: record[4].bytes(in: payload)) : nil)
        guard schemaEntries.count < 100_000, schemaKeys.insert(entry.type + "\u{0}" + entry.name).inserted else { return }
        schemaEntries.append(entry)
    }
}
