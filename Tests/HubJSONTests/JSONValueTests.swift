import Testing

@testable import HubJSON

@Suite struct JSONValueTests {
    func parseError(_ bytes: [UInt8]) -> JSONParseError? {
        do { _ = try JSONValue.parse(bytes); return nil } catch { return error }
    }
    func parseError(_ s: String) -> JSONParseError? { parseError(Array(s.utf8)) }

    @Test func serializesCompactlyInInsertionOrder() {
        let v: JSONValue = ["z": 1, "a": [true, false, nil], "m": 1.5, "s": "x"]
        #expect(v.serialized() == #"{"z":1,"a":[true,false,null],"m":1.5,"s":"x"}"#)
        #expect(JSONValue.number(-3).serialized() == "-3")
        #expect(JSONValue.number(-0.0).serialized() == "-0")
        #expect(JSONValue.number(1e300).serialized() == "1e+300")
        #expect(JSONValue.number(0.1).serialized() == "0.1")
        #expect(JSONValue.number(9_007_199_254_740_993).serialized() == "9007199254740992")
        #expect(JSONValue.number(.nan).serialized() == "null")
    }

    @Test func escapesStrings() {
        #expect(
            JSONValue.string("a\"b\\c\n\r\t\u{8}\u{C}\u{1}\u{1F}/é😀").serialized()
                == "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f/é😀\"")
    }

    @Test func parsesEscapesAndSurrogatePairs() throws {
        #expect(try JSONValue.parse(#""\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC""#) == .string("\"\\/\u{8}\u{C}\n\r\t\u{41}é€"))
        #expect(try JSONValue.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(parseError(#""\ud83d""#) != nil)  // lone high
        #expect(parseError(#""\ude00""#) != nil)  // lone low
        #expect(parseError(#""\ud83d\u0041""#) != nil)  // high + non-low
        #expect(parseError(#""\x""#)?.offset == 2)
        #expect(parseError(#""\u12G4""#)?.offset == 5)
        #expect(parseError("\"a\u{1}\"")?.offset == 2)  // raw control char
        #expect(parseError(#""abc"#) != nil)  // unterminated
    }

    /// `{"state":"ON","state":"OFF"}` is a question, not a command: a key given twice is refused,
    /// at the second one, in small and large objects and at any depth; escapes count as written.
    @Test func refusesAKeyGivenTwice() throws {
        let twice = parseError(#"{"state":"ON","state":"OFF"}"#)
        #expect(twice?.offset == 14)
        #expect(twice?.description == #"invalid JSON at byte 14: expected each key once in an object ("state" is given twice)"#)
        #expect(parseError(#"{"a":{"b":1,"b":1}}"#)?.offset == 12)
        #expect(parseError(#"{"a":1,"a":2}"#) != nil)
        let large = (0..<40).map { "\"k\($0)\":\($0)" }.joined(separator: ",")
        #expect(try JSONValue.parse("{" + large + "}")["k39"] == .number(39))
        #expect(parseError("{" + large + #","k7":0}"#)?.expected.contains(#""k7""#) == true)
        // The same key in sibling objects is fine.
        #expect(try JSONValue.parse(#"[{"a":1},{"a":2}]"#) == [["a": 1], ["a": 2]])
    }

    @Test func parsesNumbers() throws {
        #expect(try JSONValue.parse("0") == .number(0))
        #expect(try JSONValue.parse("-0").doubleValue?.sign == .minus)
        #expect(try JSONValue.parse("12.5e-1") == .number(1.25))
        #expect(try JSONValue.parse("1E+2") == .number(100))
        #expect(try JSONValue.parse("0.30000000000000004") == .number(0.30000000000000004))
        for bad in ["01", "-", "1.", ".5", "+1", "1e", "1e+", "--1", "0x10", "1e999", "NaN", "Infinity"] {
            #expect(parseError(bad) != nil, "\(bad) should be rejected")
        }
    }

    @Test func roundTripsDoubles() throws {
        for d in [0.1, 1.0 / 3.0, 123456.789e-30, 5e-324, 1.7976931348623157e308, -2.5, 4e15 + 0.5] {
            let text = JSONValue.number(d).serialized()
            #expect(try JSONValue.parse(text) == .number(d))
        }
    }

    @Test func rejectsTrailingGarbageAndNamesOffset() {
        let e = parseError(#"{"a":1} x"#)
        #expect(e?.offset == 8)
        #expect(e?.expected == "end of input")
        #expect(e?.description == "invalid JSON at byte 8: expected end of input")
        #expect(parseError("") != nil)
        #expect(parseError("   ") != nil)
        #expect(parseError("[1,]") != nil)
        #expect(parseError(#"{"a":1,}"#) != nil)
        #expect(parseError(#"{"a" 1}"#)?.expected == "':'")
        #expect(parseError("{1:2}")?.expected == "a string key")
        #expect(parseError("tru") != nil)
        #expect(parseError("nul") != nil)
        #expect(parseError("[1 2]") != nil)
    }

    @Test func nestingDepthLimit() throws {
        let ok = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
        #expect(throws: Never.self) { try JSONValue.parse(ok) }
        let deep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
        #expect(parseError(deep)?.offset == 64)
        let deepObj = String(repeating: #"{"a":"#, count: 65) + "1" + String(repeating: "}", count: 65)
        #expect(parseError(deepObj) != nil)
    }

    @Test func rejectsInvalidUTF8() {
        #expect(parseError([0x22, 0xC3, 0x28, 0x22])?.offset == 2)  // bad continuation
        #expect(parseError([0x22, 0xC0, 0xAF, 0x22]) != nil)  // overlong
        #expect(parseError([0x22, 0xED, 0xA0, 0x80, 0x22]) != nil)  // encoded surrogate
        #expect(parseError([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22]) != nil)  // > U+10FFFF
        #expect(parseError([0x22, 0xE2, 0x82]) != nil)  // truncated
        #expect(parseError([0x22, 0xFF, 0x22]) != nil)
        #expect(parseError([0xEF, 0xBB, 0xBF, 0x31]) != nil)  // BOM is not JSON
        #expect((try? JSONValue.parse([0x22, 0xE2, 0x82, 0xAC, 0x22])) == .string("€"))
    }

    @Test func keepsObjectOrderAndLooksUpKeys() throws {
        let v = try JSONValue.parse(#" { "b" : [ ] , "a" : { } , "c" : "x" } "#)
        guard case .object(let members) = v else { Issue.record("not an object"); return }
        #expect(members.map(\.0) == ["b", "a", "c"])
        #expect(v["c"] == .string("x"))
        #expect(v["zz"] == nil)
        #expect(v.serialized() == #"{"b":[],"a":{},"c":"x"}"#)
        #expect(JSONValue.object([("a", 1), ("b", 2)]) != JSONValue.object([("b", 2), ("a", 1)]))
    }
}
