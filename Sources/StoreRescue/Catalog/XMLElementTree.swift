import Foundation
import FoundationXML

/// One element of a small XML document: its name, attributes, child elements and the line its
/// start tag is on (for error messages). Text content is not kept: `.xcdatamodel` files hold
/// everything in attributes.
struct XMLElementNode: Sendable, Equatable {
    var name: String
    var attributes: [String: String]
    var children: [XMLElementNode]
    var line: Int

    func attribute(_ name: String) -> String? { attributes[name] }

    func children(named name: String) -> [XMLElementNode] { children.filter { $0.name == name } }
}

/// Builds an `XMLElementNode` tree with FoundationXML's `XMLParser`, strictly.
///
/// `XMLDocument` is not used on purpose: on Linux it silently "recovers" malformed documents
/// (a missing end tag becomes a well-formed tree) and resolves external entities, so it would
/// read `<!ENTITY x SYSTEM "file:///etc/passwd">` into the model. `XMLParser` reports the first
/// well-formedness error with its line; on top of that, any document type declaration is refused
/// before parsing (an `.xcdatamodel` never has one) and element count and depth are bounded.
enum XMLElementTreeReader {
    struct Failure: Error, Equatable, Sendable {
        var line: Int
        var column: Int
        var reason: String
    }

    static func parse(_ data: Data, maximumElements: Int = 1_000_000, maximumDepth: Int = 64) throws(Failure) -> XMLElementNode {
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) {
            throw Failure(line: 1, column: 1, reason: "the file is empty")
        }
        if let line = lineOfDocumentTypeDeclaration(in: data) {
            throw Failure(
                line: line, column: 1,
                reason: "a document type declaration (<!DOCTYPE or <!ENTITY) is not accepted: model files have none, and entities can pull in other files")
        }
        let builder = TreeBuilder(maximumElements: maximumElements, maximumDepth: maximumDepth)
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        parser.delegate = builder
        let succeeded = parser.parse()
        if let limit = builder.limitFailure { throw limit }
        // The first error is the one to report (later ones follow from it); XMLParser can also
        // return true and still record an error (a premature end, extra content).
        if let first = builder.firstError { throw first }
        if !succeeded || parser.parserError != nil {
            let code = (parser.parserError as NSError?)?.code ?? 0
            throw Failure(line: max(1, parser.lineNumber), column: max(1, parser.columnNumber), reason: reason(forLibXMLCode: code))
        }
        guard let root = builder.root else {
            throw Failure(line: max(1, parser.lineNumber), column: max(1, parser.columnNumber), reason: "the document has no root element")
        }
        return root
    }

    /// The line of the first `<!DOCTYPE` or `<!ENTITY`, if any.
    static func lineOfDocumentTypeDeclaration(in data: Data) -> Int? {
        let bytes = [UInt8](data)
        let markers = [Array("<!DOCTYPE".utf8), Array("<!ENTITY".utf8)]
        var line = 1
        for index in bytes.indices {
            if bytes[index] == 0x0A { line += 1 }
            if bytes[index] == UInt8(ascii: "<"), markers.contains(where: { bytes[index...].starts(with: $0) }) { return line }
        }
        return nil
    }

    /// The libxml2 error numbers `XMLParser` reports, in words (the common ones).
    static func reason(forLibXMLCode code: Int) -> String {
        switch code {
        case 4: return "the document is empty or is not XML (no start tag)"
        case 5: return "the document does not end where its root element does (an unclosed element or extra content)"
        case 9: return "an invalid character"
        case 26: return "an undeclared entity reference"
        case 39, 41: return "an attribute value is not quoted"
        case 42: return "the same attribute appears twice on one element"
        case 65: return "an element's attributes are malformed (a missing space, \">\" or \"/>\")"
        case 73: return "an element's start tag is not closed with \">\""
        case 76: return "an end tag does not match its start tag"
        case 77: return "the document ends inside an element"
        default: return "the XML is not well-formed (libxml2 error \(code))"
        }
    }
}

/// Collects elements as `XMLParser` reports them.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    let maximumElements: Int
    let maximumDepth: Int
    var stack: [XMLElementNode] = []
    var root: XMLElementNode?
    var elementCount = 0
    var limitFailure: XMLElementTreeReader.Failure?
    var firstError: XMLElementTreeReader.Failure?

    init(maximumElements: Int, maximumDepth: Int) {
        self.maximumElements = maximumElements
        self.maximumDepth = maximumDepth
    }

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        elementCount += 1
        if elementCount > maximumElements || stack.count >= maximumDepth {
            let what = elementCount > maximumElements ? "more than \(maximumElements) elements" : "elements nested deeper than \(maximumDepth)"
            limitFailure = XMLElementTreeReader.Failure(line: parser.lineNumber, column: parser.columnNumber, reason: "the document has \(what)")
            parser.abortParsing()
            return
        }
        stack.append(XMLElementNode(name: elementName, attributes: attributes, children: [], line: parser.lineNumber))
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard firstError == nil else { return }
        firstError = XMLElementTreeReader.Failure(
            line: max(1, parser.lineNumber), column: max(1, parser.columnNumber),
            reason: XMLElementTreeReader.reason(forLibXMLCode: (parseError as NSError).code))
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard let finished = stack.popLast() else { return }
        if stack.isEmpty {
            root = finished
        } else {
            stack[stack.count - 1].children.append(finished)
        }
    }
}
