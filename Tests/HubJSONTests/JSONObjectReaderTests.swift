import Testing

@testable import HubJSON

@Suite struct JSONObjectReaderTests {
    /// Reads `text` with `body`; the error's description, or "ok".
    func problem(_ text: String, _ body: (JSONObjectReader) throws -> Void) -> String {
        do {
            let reader = try JSONObjectReader(parsing: text)
            try body(reader)
            return "ok"
        } catch let error as JSONFieldError {
            return error.description
        } catch {
            return "not JSON: \(error)"
        }
    }

    /// The error's kind and path, or nil when reading succeeds.
    func failure(_ text: String, _ body: (JSONObjectReader) throws -> Void) -> JSONFieldError? {
        do {
            try body(try JSONObjectReader(JSONValue.parse(text)))
            return nil
        } catch let error as JSONFieldError {
            return error
        } catch {
            return nil
        }
    }

    @Test func unknownKeysAreRefusedWithTheKnownKeys() {
        #expect(problem(#"{"host":"h","prot":1}"#) { try $0.allow(["host", "port"]) } == "unknown key prot (known: host, port)")
        #expect(problem(#"{"host":"h","port":1}"#) { try $0.allow(["host", "port"]) } == "ok")
        #expect(problem(#"{}"#) { try $0.allow([]) } == "ok")
        #expect(problem(#"{"a":1}"#) { try $0.allow([]) } == "unknown key a (known: )")
        // The first unknown key in document order.
        #expect(problem(#"{"z":1,"y":2,"a":3}"#) { try $0.allow(["a"]) } == "unknown key z (known: a)")
        // A null value is still a key.
        #expect(problem(#"{"colour":null}"#) { try $0.allow(["color"]) } == "unknown key colour (known: color)")
        // A transport's own keys beside the object's: both allowed, both named when refusing.
        #expect(problem(#"{"host":"h","transaction":"t"}"#) { try $0.allow(["host"], ["transaction"]) } == "ok")
        #expect(
            problem(#"{"hots":"h"}"#) { try $0.allow(["port", "host"], ["transaction", "host"]) }
                == "unknown key hots (known: host, port, transaction)")
        let e = failure(#"{"x":1}"#) { try $0.allow(["b", "a"]) }
        #expect(e == JSONFieldError(path: "x", kind: .unknownKey(known: ["a", "b"])))
    }

    @Test func wrongTypesNameTheKeyAndTheExpectation() {
        #expect(problem(#"{"k":1}"#) { _ = try $0.string("k") } == "k must be a string")
        #expect(problem(#"{"k":"1"}"#) { _ = try $0.number("k") } == "k must be a number")
        #expect(problem(#"{"k":"yes"}"#) { _ = try $0.bool("k") } == "k must be true or false")
        #expect(problem(#"{"k":1}"#) { _ = try $0.bool("k") } == "k must be true or false")
        #expect(problem(#"{"k":true}"#) { _ = try $0.number("k") } == "k must be a number")
        #expect(problem(#"{"k":1.5}"#) { _ = try $0.integer("k", in: 0...9) } == "k must be a whole number from 0 to 9")
        #expect(problem(#"{"k":10}"#) { _ = try $0.integer("k", in: 0...9) } == "k must be a whole number from 0 to 9")
        #expect(problem(#"{"k":-1}"#) { _ = try $0.integer("k", in: 0...9) } == "k must be a whole number from 0 to 9")
        #expect(problem(#"{"k":7}"#) { _ = try $0.number("k", in: 0.5...6) } == "k must be a number from 0.5 to 6.0")
        #expect(problem(#"{"k":"a"}"#) { _ = try $0.strings("k") } == "k must be a list of strings")
        #expect(problem(#"{"k":["a",1]}"#) { _ = try $0.strings("k") } == "k must be a list of strings")
        #expect(problem(#"{"k":{}}"#) { _ = try $0.array("k") } == "k must be a list")
        #expect(problem(#"{"k":{"a":1}}"#) { _ = try $0.stringMap("k") } == "k must be an object of strings")
        #expect(problem(#"{"k":[1]}"#) { _ = try $0.object("k") } == "k must be a JSON object")
        #expect(failure(#"{"k":1}"#) { _ = try $0.string("k") }?.kind == .wrongType(expected: "a string"))
    }

    @Test func typedValuesAreRead() throws {
        let r = try JSONObjectReader(parsing: #"{"s":"x","n":2.5,"i":3,"b":false,"l":["a","b"],"m":{"g":"kitchen"},"z":null}"#)
        #expect(try r.string("s") == "x")
        #expect(try r.number("n") == 2.5)
        #expect(try r.integer("i", in: 0...3) == 3)
        #expect(try r.bool("b") == false)
        #expect(try r.strings("l") == ["a", "b"])
        #expect(try r.stringMap("m")?.map { "\($0.0)=\($0.1)" } == ["g=kitchen"])
        #expect(try r.array("l")?.count == 2)
        #expect(r.keys == ["s", "n", "i", "b", "l", "m", "z"])
    }

    @Test func missingAndNullAreAbsentAndRequireSaysSo() throws {
        let r = try JSONObjectReader(parsing: #"{"z":null}"#)
        #expect(try r.string("z") == nil)
        #expect(try r.string("nothing") == nil)
        #expect(try r.number("z") == nil)
        #expect(try r.object("z") == nil)
        #expect(r.has("z") == false)
        #expect(problem(#"{"z":null}"#) { _ = try $0.require("z", $0.string) } == "z is required")
        #expect(problem(#"{}"#) { _ = try $0.require("id", $0.string) } == "id is required")
        #expect(problem(#"{"id":"p"}"#) { _ = try $0.require("id", $0.string) } == "ok")
        #expect(problem(#"{"id":7}"#) { _ = try $0.require("id", $0.string) } == "id must be a string")
    }

    @Test func nestedReadersExtendThePath() {
        let cases: [(String, (JSONObjectReader) throws -> Void, String)] = [
            (
                #"{"mqtt":{"tls":{"ca":"x"}}}"#,
                { r in
                    try r.object("mqtt")?.object("tls")?.allow(["ca_file", "cert_file"])
                }, "unknown key mqtt.tls.ca (known: ca_file, cert_file)"
            ),
            (
                #"{"mqtt":{"port":"1883"}}"#,
                { r in
                    _ = try r.object("mqtt")?.integer("port", in: 1...65535)
                }, "mqtt.port must be a whole number from 1 to 65535"
            ),
            (#"{"mqtt":3}"#, { r in _ = try r.object("mqtt") }, "mqtt must be a JSON object"),
            (
                #"{"devices":[{"id":"a"},{"name":"b"}]}"#,
                { r in
                    for d in try r.objects("devices") ?? [] { _ = try d.require("id", d.string) }
                }, "devices[1].id is required"
            ),
            (#"{"devices":[{"id":"a"},7]}"#, { r in _ = try r.objects("devices") }, "devices[1] must be a JSON object"),
            (#"{"devices":{"id":"a"}}"#, { r in _ = try r.objects("devices") }, "devices must be a list"),
            (
                #"{"a":{"b":{"c":{"d":true}}}}"#,
                { r in
                    _ = try r.object("a")?.object("b")?.object("c")?.string("d")
                }, "a.b.c.d must be a string"
            ),
            (
                #"{"devices":[{"id":"x"}]}"#,
                { r in
                    for d in try r.objects("devices") ?? [] { throw d.invalid("id", "\"x\" is listed twice") }
                }, "devices[0].id \"x\" is listed twice"
            )
        ]
        for (text, read, expected) in cases {
            #expect(problem(text, read) == expected, "\(text)")
        }
        let e = failure(#"{"a":{"b":1}}"#) { r in _ = try r.object("a")?.string("b") }
        #expect(e?.path == "a.b" && e?.key == "b")
    }

    @Test func theTopLevelMustBeAnObject() {
        for text in ["[1]", "1", "\"x\"", "true", "null"] {
            #expect(problem(text) { _ in } == "the top level must be a JSON object", "\(text)")
        }
        #expect(problem("") { _ in } == "ok")  // empty text: no settings
        #expect(problem(" \n") { _ in } == "ok")
        #expect(problem("{") { _ in }.hasPrefix("not JSON: invalid JSON at byte 1"))
        #expect(throws: JSONFieldError(path: "cfg", kind: .notAnObject)) { try JSONObjectReader(.array([]), path: "cfg") }
    }

    @Test func wordingOfEveryKind() {
        let cases: [(JSONFieldError, String)] = [
            (JSONFieldError(path: "", kind: .notAnObject), "the top level must be a JSON object"),
            (JSONFieldError(path: "mqtt", kind: .notAnObject), "mqtt must be a JSON object"),
            (JSONFieldError(path: "a.b", kind: .unknownKey(known: ["c", "d"])), "unknown key a.b (known: c, d)"),
            (JSONFieldError(path: "a.id", kind: .missing), "a.id is required"),
            (JSONFieldError(path: "port", kind: .wrongType(expected: "a number")), "port must be a number"),
            (JSONFieldError(path: "", kind: .wrongType(expected: "a number")), "the value must be a number"),
            (JSONFieldError(path: "id", kind: .invalid(message: "is listed twice")), "id is listed twice")
        ]
        for (error, text) in cases { #expect(error.description == text) }
    }

    @Test func valueSettingAndSortedKeys() {
        var v: JSONValue = ["b": 1, "a": ["d": 2, "c": 3]]
        v["e"] = "x"
        v["b"] = nil
        v["a"] = ["d": 2, "c": [["z": 1, "y": 2]]]
        #expect(v.serialized() == #"{"a":{"d":2,"c":[{"z":1,"y":2}]},"e":"x"}"#)
        #expect(v.sortingKeys().serialized() == #"{"a":{"c":[{"y":2,"z":1}],"d":2},"e":"x"}"#)
        var notObject: JSONValue = [1]
        notObject["k"] = 1
        #expect(notObject == [1])
        #expect(JSONValue.string("a/b").serialized() == #""a/b""#)  // slashes are not escaped
    }
}

extension JSONObjectReaderTests {
    /// A document that gives a key twice never reaches a reader (driver settings, commands,
    /// configuration): the parser refuses it. An object built in code with one reads as its last.
    @Test func aKeyGivenTwiceIsRefusedBeforeAnyReader() throws {
        #expect(throws: JSONParseError(offset: 25, expected: #"each key once in an object ("timeout" is given twice)"#)) {
            try JSONObjectReader(parsing: #"{"timeout":2,"retries":1,"timeout":0.3}"#)
        }
        var v: JSONValue = .object([("a", 1), ("a", 2)])
        #expect(v["a"] == 2)
        v["a"] = 3
        #expect(v.serialized() == #"{"a":1,"a":3}"#)
    }
}
