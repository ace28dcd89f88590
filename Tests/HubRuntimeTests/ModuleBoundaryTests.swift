import Foundation
import Testing

/// The package's shape is what docs/architecture.md says: every library target has its row in the
/// module table, the engine imports no transport, and the surfaces never name each other.
@Suite struct ModuleBoundaryTests {
    static let root = DocsAndScriptsTests.root

    /// The library targets `Package.swift` declares (test-only targets under `Tests/` aside).
    static func libraryTargets() throws -> [String] {
        let package = try DocsAndScriptsTests.read("Package.swift")
        let regex = try NSRegularExpression(pattern: #"\.(?:target|systemLibrary)\(name: "([A-Za-z0-9]+)"([^\n]*)"#)
        let range = NSRange(package.startIndex..., in: package)
        return regex.matches(in: package, range: range).compactMap { match in
            let name = String(package[Range(match.range(at: 1), in: package)!])
            let rest = String(package[Range(match.range(at: 2), in: package)!])
            return rest.contains("path: \"Tests/") ? nil : name
        }
    }

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

    @Test func noLibraryTargetIsOver5000Lines() throws {
        for module in try Self.libraryTargets() {
            let lines = try Self.sources(module).reduce(0) { $0 + $1.text.split(separator: "\n", omittingEmptySubsequences: false).count }
            #expect(lines <= 5000, "Sources/\(module) has \(lines) lines")
        }
    }
}
