import HubDomain
import HubEngine

/// A piece of HTML that is safe to send: text interpolated into it is escaped, other `HTML` is
/// kept as it is. Every console page is built from these, so nothing a user typed (a device named
/// `<script>`) can become markup.
///
///     let row: HTML = "<td>\(device.name)</td>"   // the name is escaped
struct HTML: ExpressibleByStringInterpolation, Sendable, CustomStringConvertible {
    private(set) var text: String

    init(stringLiteral value: String) { text = value }
    init(stringInterpolation: Interpolation) { text = stringInterpolation.text }
    /// Markup the caller vouches for (the embedded CSS and script).
    init(trusted text: String) { self.text = text }

    var description: String { text }

    static let empty = HTML(trusted: "")

    struct Interpolation: StringInterpolationProtocol {
        var text = ""
        init(literalCapacity: Int, interpolationCount: Int) { text.reserveCapacity(literalCapacity + interpolationCount * 16) }
        mutating func appendLiteral(_ literal: String) { text += literal }
        /// Text: escaped.
        mutating func appendInterpolation(_ value: String) { text += HTML.escape(value) }
        mutating func appendInterpolation(_ value: Substring) { text += HTML.escape(String(value)) }
        mutating func appendInterpolation(_ value: Int) { text += String(value) }
        mutating func appendInterpolation(_ value: UInt64) { text += String(value) }
        mutating func appendInterpolation(_ value: HTML) { text += value.text }
        mutating func appendInterpolation(_ values: [HTML]) { for v in values { text += v.text } }
        mutating func appendInterpolation(_ value: HTML?) { text += value?.text ?? "" }
    }

    /// `&`, `<`, `>`, `"` and `'` as entities: safe in text and in quoted attribute values.
    static func escape(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    /// `parts` one after another.
    static func join(_ parts: [HTML]) -> HTML { HTML(trusted: parts.map(\.text).joined()) }

    /// A JSON value for a `data-` attribute (escaped as any attribute text).
    static func json(_ value: JSONValue) -> String { value.serialized() }
}

/// Percent-encoding for a path segment or query value built into a link.
enum URLText {
    static func component(_ value: String) -> String {
        var out = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }

    /// `?a=1&b=2` from the pairs whose value is not empty.
    static func query(_ pairs: [(String, String?)]) -> String {
        let kept = pairs.compactMap { key, value in value.flatMap { $0.isEmpty ? nil : "\(key)=\(component($0))" } }
        return kept.isEmpty ? "" : "?" + kept.joined(separator: "&")
    }
}

extension String {
    func leftPadded(to width: Int, with pad: Character = "0") -> String {
        count >= width ? self : String(repeating: pad, count: width - count) + self
    }
}
