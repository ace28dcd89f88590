import Foundation
import Testing

/// The package's shape is what docs/architecture.md says: every library target has its row in the
/// module table, the engine imports no transport, and the surfaces never name each other.
@Suite struct ModuleBoundaryTests {
    static let root = DocsAndScriptsTests.root

    /// The library targets `Package.swift` declares (test-only targets under `Tests/` aside), each
    /// with its directory: `Sources/<name>`, or its `path:` (the plugins).
    static func libraryModules() throws -> [(name: String, directory: String)] {
        let package = try DocsAndScriptsTests.read("Package.swift")
        // A target's text runs from its `.target(` to the next target of any kind (targets may span lines).
        let regex = try NSRegularExpression(
            pattern:
                #"\.(?:target|systemLibrary)\(\s*name: "([A-Za-z0-9]+)"((?:(?!\.(?:target|testTarget|executableTarget|systemLibrary)\()[\s\S])*)"#
        )
        let path = try NSRegularExpression(pattern: #"path: "([^"]+)""#)
        let range = NSRange(package.startIndex..., in: package)
        return regex.matches(in: package, range: range).compactMap { match in
            let name = String(package[Range(match.range(at: 1), in: package)!])
            let rest = String(package[Range(match.range(at: 2), in: package)!])
            let directory = path.firstMatch(in: rest, range: NSRange(rest.startIndex..., in: rest)).map {
                String(rest[Range($0.range(at: 1), in: rest)!])
            }
            if directory?.hasPrefix("Tests/") == true { return nil }
            return (name, directory ?? "Sources/" + name)
        }
    }

    /// The names of the library targets (see ``libraryModules()``).
    static func libraryTargets() throws -> [String] { try libraryModules().map(\.name) }

    /// The Swift files of one module, with their text.
    static func sources(_ module: String) throws -> [(path: String, text: String)] {
        let directory = root.appendingPathComponent("Sources/" + module).path
        guard let walk = FileManager.default.enumerator(atPath: directory) else { return [] }
        var out: [(String, String)] = []
        for case let path as String in walk where path.hasSuffix(".swift") {
            out.append(("Sources/\(module)/\(path)", try DocsAndScriptsTests.read("Sources/\(module)/\(path)")))
        }
        return out
    }

    /// Code lines only: comments (`//`, `///`) dropped, so a doc comment may still mention MQTT.
    static func code(_ text: String) -> [String] {
        text.split(separator: "\n").map { line in
            guard let comment = line.range(of: "//") else { return String(line) }
            return String(line[..<comment.lowerBound])
        }
    }

    @Test func everyLibraryTargetIsInTheModuleTable() throws {
        let table = try DocsAndScriptsTests.read("docs/architecture.md")
        let targets = try Self.libraryTargets()
        #expect(targets.count > 20, "\(targets)")
        // The module table and the prose under it, up to the next section.
        let start = try #require(table.range(of: "## Modules"))
        let end = try #require(table.range(of: "\n## ", range: start.upperBound..<table.endIndex))
        let section = table[start.upperBound..<end.lowerBound]
        let missing = targets.filter { !section.contains("`\($0)`") }
        #expect(missing.isEmpty, "Package.swift's targets not described in docs/architecture.md's Modules section: \(missing)")
    }

    @Test func theEngineImportsNoTransport() throws {
        for module in ["HubEngine", "HubHistory"] {
            for (path, text) in try Self.sources(module) {
                for line in Self.code(text) where line.hasPrefix("import ") {
                    let imported = line.dropFirst("import ".count).trimmingCharacters(in: .whitespaces)
                    #expect(
                        !["MQTT", "Hummingbird", "HummingbirdCore", "HubMQTT", "HubHTTP", "HubApp", "HubPostgres", "NIOCore", "NIOPosix"]
                            .contains(imported),
                        "\(path) imports \(imported)")
                }
            }
        }
    }

    @Test func theSurfacesNeverNameEachOther() throws {
        let mqttName = try NSRegularExpression(pattern: #"\bMQTT[A-Z][A-Za-z]*\b|\bHomeAssistantDiscovery\b"#)
        for (path, text) in try Self.sources("HubHTTP") {
            for line in Self.code(text) {
                #expect(!line.hasPrefix("import HubMQTT") && !line.hasPrefix("import MQTT"), "\(path): \(line)")
                let range = NSRange(line.startIndex..., in: line)
                #expect(mqttName.firstMatch(in: line, range: range) == nil, "\(path) names an MQTT type: \(line)")
            }
        }
        for (path, text) in try Self.sources("HubMQTT") {
            for line in Self.code(text) {
                #expect(!line.hasPrefix("import HubHTTP") && !line.hasPrefix("import Hummingbird"), "\(path): \(line)")
            }
        }
    }

    @Test func everyPublicDeclarationIsDocumented() throws {
        var missing: [String] = []
        for directory in try Self.libraryDirectories() {
            let absolute = Self.root.appendingPathComponent(directory).path
            guard let walk = FileManager.default.enumerator(atPath: absolute) else { continue }
            for case let file as String in walk where file.hasSuffix(".swift") {
                let path = directory + "/" + file
                missing += DocComments.undocumented(in: try DocsAndScriptsTests.read(path)).map { "\(path):\($0.line): \($0.text)" }
            }
        }
        let count = missing.count
        #expect(count == 0, "public declarations without a /// comment:\n\(missing.sorted().joined(separator: "\n"))")
    }

    @Test func theDocCommentScannerFindsWhatItShould() {
        let sample = """
            /// Documented.
            public struct A {
                public var bare: Int
                /// Documented.
                public private(set) var set: Int
                @inlinable
                public func attributed() {}
                /// Documented, over an attribute.
                @discardableResult
                public func fine() -> Int {
                    let local = "public var notADeclaration {"
                    return local.count
                }
                public init(
                    multiLine: Int
                ) {}
                var internalOne = 0
            }
            /// Documented.
            public enum E {
                case undocumented
                /// Documented.
                case one, two
                var computed: Int {
                    switch self {
                    case .undocumented: return 0
                    default: return 1
                    }
                }
            }
            /// Documented.
            public protocol P {
                func requirement()
            }
            enum Internal {
                case notPublic
                public static let spelled = 1
            }
            """
        let found = DocComments.undocumented(in: sample).map(\.line)
        #expect(found == [3, 7, 14, 21, 33, 37], "\(found)")
    }

    /// The directories of the library modules (see ``libraryModules()``), so drivers and simulators count too.
    static func libraryDirectories() throws -> [String] { try libraryModules().map(\.directory) }

    /// PostgreSQL is read and written on its event loop: no thread of HubPostgres's callers blocks on
    /// a future (`.wait()`), and no `try?` there turns a failed statement into an answer (only
    /// closing and a back-off's sleep may drop their own error).
    @Test func postgresNeverBlocksAThreadNorHidesAnError() throws {
        let files = try Self.sources("HubPostgres")
        #expect(!files.isEmpty)
        for (path, text) in files {
            for line in Self.code(text) {
                #expect(!line.contains(".wait()"), "\(path) blocks a thread on a future: \(line)")
                guard line.contains("try?") else { continue }
                let closing = ["close()", "shutdownGracefully", "Task.sleep"].contains { line.contains($0) }
                #expect(closing, "\(path) reads an error as an answer: \(line)")
            }
        }
    }

    /// A budget, not a boundary: HubDomain holds the strips' and the stays' rules as well, and the
    /// split of the middle by concept replaces the budget.
    @Test func noLibraryTargetIsOver5200Lines() throws {
        for module in try Self.libraryTargets() {
            let lines = try Self.sources(module).reduce(0) { $0 + $1.text.split(separator: "\n", omittingEmptySubsequences: false).count }
            #expect(lines <= 5200, "Sources/\(module) has \(lines) lines")
        }
    }
}

/// Finds `public` and `open` declarations without a `///` comment in one Swift file: types,
/// functions, initialisers, properties, subscripts, typealiases, the cases of a public enum, the
/// requirements of a public protocol and the members of a `public extension` (which need no comment
/// themselves). Attribute lines (`@inlinable`) may stand between the comment and the declaration;
/// several cases on one line share one comment. A line scanner, which is enough for this code base:
/// it follows braces outside comments and string literals to know what a member belongs to.
enum DocComments {
    static let modifierWords: Set<String> = [
        "public", "open", "private", "fileprivate", "internal", "package", "static", "class", "final", "override",
        "nonisolated", "mutating", "nonmutating", "lazy", "weak", "unowned", "required", "convenience", "indirect",
        "dynamic", "optional", "consuming", "borrowing", "distributed"
    ]
    static let introducers: Set<String> = [
        "func", "var", "let", "init", "deinit", "subscript", "class", "struct", "enum", "protocol", "actor", "extension",
        "case", "typealias", "associatedtype", "macro"
    ]
    static let containers: Set<String> = ["class", "struct", "enum", "protocol", "actor", "extension"]
    static let accessLevels: Set<String> = ["public", "open", "private", "fileprivate", "internal", "package"]

    /// The undocumented public declarations of `text`, by line number (from 1).
    static func undocumented(in text: String) -> [(line: Int, text: String)] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var stringEnd: String?  // the terminator of a multi-line string literal the scan is inside
        var scopes: [(kind: String, isPublic: Bool)] = []
        var opening: (kind: String, isPublic: Bool)?  // a type declared, its `{` not yet seen
        var found: [(line: Int, text: String)] = []
        for (index, line) in lines.enumerated() {
            let startsInString = stringEnd != nil
            let code = codeOnly(line, stringEnd: &stringEnd)
            if !startsInString, let declared = declaration(code) {
                let (words, introducer) = (declared.modifiers, declared.introducer)
                let scope = scopes.last ?? (kind: "file", isPublic: false)
                let access = words.filter { accessLevels.contains($0) }
                let spelled = access.contains("public") || access.contains("open")
                let implied =
                    access.isEmpty && introducer != "extension"
                    && ((scope.kind == "protocol" || scope.kind == "extension") && scope.isPublic
                        || introducer == "case" && scope.kind == "enum" && scope.isPublic)
                if (spelled && introducer != "extension") || implied, !documented(lines, before: index) {
                    found.append((index + 1, line.trimmingCharacters(in: .whitespaces)))
                }
                opening = containers.contains(introducer) ? (introducer, spelled) : nil
            }
            for character in code {
                if character == "{" {
                    scopes.append(opening ?? (kind: "body", isPublic: false))
                    opening = nil
                } else if character == "}" {
                    _ = scopes.popLast()
                }
            }
        }
        return found
    }

    /// Whether a `///` line comes before line `index`, over attribute lines.
    static func documented(_ lines: [String], before index: Int) -> Bool {
        var i = index - 1
        while i >= 0, lines[i].trimmingCharacters(in: .whitespaces).hasPrefix("@") { i -= 1 }
        return i >= 0 && lines[i].trimmingCharacters(in: .whitespaces).hasPrefix("///")
    }

    /// The modifiers and the introducing keyword when `code` starts a declaration, attributes skipped.
    static func declaration(_ code: String) -> (modifiers: [String], introducer: String)? {
        var rest = Substring(code.trimmingCharacters(in: .whitespaces))
        while rest.hasPrefix("@") {
            rest = rest.dropFirst().drop { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "." }
            if rest.hasPrefix("(") {
                var depth = 0
                guard
                    let close = rest.firstIndex(where: { c in
                        depth += c == "(" ? 1 : c == ")" ? -1 : 0
                        return depth == 0
                    })
                else { return nil }
                rest = rest[rest.index(after: close)...]
            }
            rest = rest.drop { $0 == " " }
        }
        // Words, with `private(set)`-style suffixes kept on their word (they are not the access level).
        var words: [String] = []
        var scanner = rest[...]
        while let first = scanner.first, first.isLetter || first == "_" {
            var word = String(scanner.prefix { $0.isLetter || $0 == "_" })
            scanner = scanner.dropFirst(word.count)
            for suffix in ["(set)", "(unsafe)"] where scanner.hasPrefix(suffix) {
                word += suffix
                scanner = scanner.dropFirst(suffix.count)
            }
            words.append(word)
            scanner = scanner.drop { $0 == " " }
        }
        var modifiers: [String] = []
        for (i, word) in words.enumerated() {
            let next = i + 1 < words.count ? words[i + 1] : ""
            // `class func`, `class var`: a modifier; `class Name`: the introducer.
            if word == "class", introducers.contains(next) || isModifier(next) {
                modifiers.append(word)
                continue
            }
            if introducers.contains(word) { return (modifiers, word) }
            guard isModifier(word) else { return nil }
            modifiers.append(word)
        }
        return nil
    }

    static func isModifier(_ word: String) -> Bool { modifierWords.contains(String(word.prefix { $0 != "(" })) }

    /// The line's code: comments dropped and string literals emptied. `stringEnd` carries a
    /// multi-line literal (three quotes, or a raw one) across lines.
    static func codeOnly(_ line: String, stringEnd: inout String?) -> String {
        let c = Array(line)
        func starts(_ s: String, at i: Int) -> Bool {
            let s = Array(s)
            return i + s.count <= c.count && Array(c[i..<i + s.count]) == s
        }
        var out = ""
        var i = 0
        while i < c.count {
            if let end = stringEnd {
                while i < c.count, !starts(end, at: i) { i += c[i] == "\\" && end == "\"\"\"" ? 2 : 1 }
                guard i < c.count else { return out }
                i += end.count
                stringEnd = nil
                continue
            }
            if starts("//", at: i) { break }
            let hashes = c[i...].prefix { $0 == "#" }.count
            if i + hashes < c.count, c[i + hashes] == "\"" {
                let pounds = String(repeating: "#", count: hashes)
                if starts("\"\"\"", at: i + hashes) {
                    stringEnd = "\"\"\"" + pounds
                    i += hashes + 3
                    continue
                }
                i += hashes + 1
                let end = "\"" + pounds
                while i < c.count, !starts(end, at: i) { i += c[i] == "\\" && hashes == 0 ? 2 : 1 }
                i += end.count
                out += "\"\""
                continue
            }
            out.append(c[i])
            i += 1
        }
        return out
    }
}
