import Testing

@testable import HubJSON

@Suite struct JSONSinkTests {
    /// Nested objects and arrays, empty ones, every kind of value and a value already built.
    func document<S: JSONSink>(_ s: inout S) {
        s.beginObject()
        s.member("a", "x\"y")
        s.member("none", nil)
        s.key("list")
        s.beginArray()
        s.number(1); s.number(-0.5); s.bool(true); s.null()
        s.beginObject(); s.endObject()
        s.beginArray(); s.endArray()
        s.beginObject(); s.member("k", number: 2); s.endObject()
        s.plainString { $0.append(contentsOf: "12:00".utf8) }
        s.endArray()
        s.member("built", value: .object([("b", .array([.string("c"), .null]))]))
        s.key("last"); s.bool(false)
        s.endObject()
    }

    @Test func textIsTheBuiltValueSerialised() throws {
        var text = JSONText()
        document(&text)
        var builder = JSONBuilder()
        document(&builder)
        let expected = #"{"a":"x\"y","none":null,"list":[1,-0.5,true,null,{},[],{"k":2},"12:00"],"built":{"b":["c",null]},"last":false}"#
        #expect(String(decoding: text.bytes, as: UTF8.self) == expected)
        #expect(builder.value.serialized() == expected)
        #expect(try JSONValue.parse(expected) == builder.value)
    }

    @Test func aTopLevelScalarIsTheWholeDocument() {
        var text = JSONText()
        text.string("only")
        var builder = JSONBuilder()
        builder.string("only")
        #expect(String(decoding: text.bytes, as: UTF8.self) == #""only""#)
        #expect(builder.value == .string("only"))
    }
}
