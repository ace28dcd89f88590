import Foundation
import Testing

/// The docs describe the hub as it is: no diary of how it came about (that is in `git log`), and
/// every link between them lands on a heading that exists.
@Suite struct DocsWordingTests {
    static let root = DocsAndScriptsTests.root

    /// Words of a work diary: numbered sessions, rounds, stops or issues, and dated headings.
    static let diary: [(pattern: String, what: String)] = [
        (#"\bsessions? +[0-9]"#, "a numbered session"),
        (#"\brounds? +[0-9]"#, "a numbered round of work"),
        (#"\bstops? +[0-9]"#, "a numbered stop"),
        (#"\bissues? +#?[0-9]"#, "an issue number"),
        (#"\bthe issue's\b"#, "the issue's"),
        (#"(?m)^#+ .*\b20[0-9]{2}-[0-9]{2}-[0-9]{2}\b"#, "a dated heading")
    ]

    /// README.md, docs/*.md, and the Swift sources and scripts (this file excepted: it names the words).
    static func textFiles() throws -> [String] {
        let manager = FileManager.default
        var paths = ["README.md"]
        paths += try manager.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/" + $0 }
        paths += try manager.contentsOfDirectory(atPath: root.appendingPathComponent("scripts").path).sorted().map { "scripts/" + $0 }
        for top in ["Sources", "Tests", "Plugins", "Fuzz"] {
            guard let walk = manager.enumerator(atPath: root.appendingPathComponent(top).path) else { continue }
            for case let path as String in walk where path.hasSuffix(".swift") { paths.append(top + "/" + path) }
        }
        let me = URL(fileURLWithPath: #filePath).lastPathComponent
        return paths.filter { !$0.hasSuffix("/" + me) }
    }

    @Test func noDiaryInTheDocsOrTheCode() throws {
        let files = try Self.textFiles()
        #expect(files.count > 100, "\(files.count) files found under \(Self.root.path)")
        var found: [String] = []
        for path in files {
            let text = try DocsAndScriptsTests.read(path)
            for (pattern, what) in Self.diary {
                let regex = try NSRegularExpression(pattern: pattern, options: [.caseInsensitive])
                for match in regex.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    let range = Range(match.range, in: text)!
                    let line = text[..<range.lowerBound].count { $0 == "\n" } + 1
                    found.append("\(path):\(line): \(what): \"\(text[range])\"")
                }
            }
        }
        #expect(found.isEmpty, "history belongs in git log, not in the docs or code:\n\(found.joined(separator: "\n"))")
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces made hyphens.
    static func anchor(_ heading: String) -> String {
        String(
            heading.lowercased().compactMap { c -> Character? in
                if c == " " { return "-" }
                return c.isLetter || c.isNumber || c == "-" || c == "_" ? c : nil
            })
    }

    /// The anchors of a Markdown file's headings (outside code blocks; repeated ones numbered).
    static func anchors(of path: String) throws -> Set<String> {
        var seen: [String: Int] = [:], result: Set<String> = []
        var inCode = false
        for line in try DocsAndScriptsTests.read(path).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.trimmingCharacters(in: .whitespaces).hasPrefix("```") { inCode.toggle(); continue }
            let title = line.drop { $0 == "#" }
            guard !inCode, line.hasPrefix("#"), title.hasPrefix(" ") else { continue }
            let base = anchor(title.trimmingCharacters(in: .whitespaces))
            let n = seen[base, default: 0]
            seen[base] = n + 1
            result.insert(n == 0 ? base : "\(base)-\(n)")
        }
        return result
    }

    /// `target` relative to the directory of `path`, both relative to the repository root.
    static func resolve(_ target: String, from path: String) -> String {
        var parts = path.split(separator: "/").dropLast().map(String.init)
        for part in target.split(separator: "/") {
            if part == ".." { _ = parts.popLast() } else if part != "." { parts.append(String(part)) }
        }
        return parts.joined(separator: "/")
    }

    @Test func everyLinkBetweenTheDocsLandsOnAHeading() throws {
        let docs = try Self.textFiles().filter { $0.hasSuffix(".md") }
        let link = try NSRegularExpression(pattern: #"\]\(([^)\s#]*)#([^)\s]+)\)"#)
        var broken: [String] = [], checked = 0
        for path in docs {
            let text = try DocsAndScriptsTests.read(path)
            for match in link.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let target = String(text[Range(match.range(at: 1), in: text)!])
                let fragment = String(text[Range(match.range(at: 2), in: text)!])
                guard !target.contains("://") else { continue }
                let normalized = target.isEmpty ? path : Self.resolve(target, from: path)
                guard normalized.hasSuffix(".md") else { continue }
                checked += 1
                guard FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(normalized).path) else {
                    broken.append("\(path): \(target)#\(fragment): no such file"); continue
                }
                if try !Self.anchors(of: normalized).contains(fragment) {
                    broken.append("\(path): \(target)#\(fragment): no such heading in \(normalized)")
                }
            }
        }
        #expect(checked > 20, "only \(checked) links with an anchor found")
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }
}
