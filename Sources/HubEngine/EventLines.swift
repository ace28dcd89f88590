import HubDomain
import HubLog

/// The JSON form of one logged event: one line of `hub events` / `hub export`, and the payload the
/// MQTT surface publishes. Keys, in order: seq, stream, version, type, schema, time, actor,
/// cause (only when the command declared one), command_id, data (and hash, in exports). A record
/// without a cause gives the line it always gave.
public enum EventLines {
    /// The event's JSON object; `event` nil for a payload this build cannot decode (an `error` key says so); `hash` added in exports.
    public static func json(_ record: EventRecord, event: HubEvent?, hash: String? = nil) -> JSONValue {
        var builder = JSONBuilder()
        write(record, event: event, hash: hash.map { .text($0) }, to: &builder)
        return builder.value
    }

    /// The event's line, decoding the payload from the record; `hash` added in exports.
    public static func render(_ record: EventRecord, hash: String? = nil) -> String {
        let event = try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
        var text = JSONText(capacity: 256)
        write(record, event: event, hash: hash.map { .text($0) }, to: &text)
        return String(decoding: text.bytes, as: UTF8.self)
    }

    /// ``json(_:event:hash:)``'s text (no hash) as UTF-8 bytes, written straight into an array:
    /// the payload the MQTT surface publishes for each event.
    public static func bytes(_ record: EventRecord, event: HubEvent?) -> [UInt8] {
        var text = JSONText(capacity: 256)
        write(record, event: event, hash: nil, to: &text)
        return text.bytes
    }

    /// The record's `hub export` line (no newline): its JSON with the chain `hash`. It is also the
    /// record's leaf in the audit's Merkle tree (docs/audit.md), so it must stay byte for byte the same.
    public static func exportLine(_ view: RecordView) -> String {
        String(decoding: exportLineBytes(view), as: UTF8.self)
    }

    /// ``exportLine(_:)``'s UTF-8 bytes, written straight into an array with no JSON value built
    /// between (the audit tree's leaf, rendered for every record appended).
    public static func exportLineBytes(_ view: RecordView) -> [UInt8] {
        let record = view.record
        let event = try? HubEvent.decode(type: record.type, schemaVersion: record.schemaVersion, payload: record.payload)
        var text = JSONText(capacity: 256)
        write(record, event: event, hash: .bytes(view.hash), to: &text)
        return text.bytes
    }

    /// The chain hash of an export line: as hex text already, or the digest's bytes.
    enum Hash {
        case text(String)
        case bytes([UInt8])
    }

    /// The line, written once for both sinks: a value (``json(_:event:hash:)``) and text (``exportLineBytes(_:)``).
    static func write<S: JSONSink>(_ record: EventRecord, event: HubEvent?, hash: Hash?, to s: inout S) {
        let attribution = Attribution(stored: record.causation.actor)
        s.beginObject()
        s.member("seq", number: Double(record.sequence))
        s.member("stream", record.stream)
        s.member("version", number: Double(record.streamVersion))
        s.member("type", record.type)
        s.member("schema", number: Double(record.schemaVersion))
        s.time("time", micros: record.timestamp)
        s.member("actor", attribution.actor)
        if let cause = attribution.cause { s.member("cause", cause) }
        s.member("command_id", record.causation.commandId)
        s.key("data")
        if let event { event.write(to: &s) } else { s.null() }
        if event == nil { s.member("error", "payload not readable by this hub version") }
        switch hash {
        case nil: break
        case .text(let hex)?: s.member("hash", hex)
        case .bytes(let digest)?:
            s.key("hash")
            s.plainString { LogVerifier.writeHex(digest, to: &$0) }
        }
        s.endObject()
    }

    /// One parsed line: the record it describes (payload re-encoded), the event, and the hash if present.
    public struct Parsed {
        /// The record, with the payload encoded again from the line's data.
        public var record: EventRecord
        /// The event the line describes.
        public var event: HubEvent
        /// The line's hash (hex), when it has one (an export line).
        public var hash: String?
    }

    /// Why an export line was refused: its number and the reason.
    public struct LineError: Error, CustomStringConvertible {
        /// The line's number, from 1.
        public var line: Int
        /// What is wrong with it.
        public var reason: String
        /// "line <n>: <reason>".
        public var description: String { "line \(line): \(reason)" }

        package init(line: Int, reason: String) {
            self.line = line
            self.reason = reason
        }
    }

    /// Parses one `hub export` line (`line` is its number, for errors).
    /// - Throws: `LineError` when it is not JSON, a key is missing or of the wrong type, or the data is not a valid event.
    public static func parse(_ text: String, line: Int) throws -> Parsed {
        let value: JSONValue
        do { value = try JSONValue.parse(text) } catch { throw LineError(line: line, reason: "not JSON: \(error)") }
        func field(_ key: String) throws -> JSONValue {
            guard let v = value[key] else { throw LineError(line: line, reason: "missing \"\(key)\"") }
            return v
        }
        func integer(_ key: String) throws -> UInt64 {
            guard let d = try field(key).doubleValue, d >= 0, d <= 9_007_199_254_740_992, d.rounded() == d else {
                throw LineError(line: line, reason: "\"\(key)\" must be a non-negative integer")
            }
            return UInt64(d)
        }
        func string(_ key: String) throws -> String {
            guard let s = try field(key).stringValue else { throw LineError(line: line, reason: "\"\(key)\" must be a string") }
            return s
        }
        let type = try string("type")
        let schema = try integer("schema")
        guard schema <= UInt64(UInt16.max) else { throw LineError(line: line, reason: "\"schema\" out of range") }
        let timeText = try string("time")
        guard let time = ISO8601.parse(timeText) else {
            throw LineError(line: line, reason: "\"time\" is not an ISO-8601 time: \(timeText)")
        }
        let commandId: String?
        switch try field("command_id") {
        case .null: commandId = nil
        case .string(let s): commandId = s
        default: throw LineError(line: line, reason: "\"command_id\" must be a string or null")
        }
        let event: HubEvent
        do {
            event = try HubEvent.fromJSON(type: type, schemaVersion: UInt16(schema), body: try field("data"))
        } catch {
            throw LineError(line: line, reason: "\"data\" does not fit \(type): \(error)")
        }
        let actor = try string("actor")
        if actor.contains(Attribution.separator) {
            throw LineError(
                line: line, reason: "\"actor\" must not contain \"\(Attribution.separator)\" (a declared cause is its own key, \"cause\")")
        }
        let cause: String?
        switch value["cause"] {
        case nil: cause = nil
        case .string(let s)?:
            do { try DeclaredCause.check(s) } catch { throw LineError(line: line, reason: "\"cause\": \(error.message)") }
            cause = s
        default: throw LineError(line: line, reason: "\"cause\" must be a string when present")
        }
        let stream = try string("stream")
        guard stream == event.stream else {
            throw LineError(line: line, reason: "stream \(stream) does not match the event's subject (\(event.stream))")
        }
        let record = EventRecord(
            sequence: try integer("seq"), stream: stream, streamVersion: try integer("version"),
            type: type, schemaVersion: UInt16(schema), timestamp: time,
            causation: Causation(commandId: commandId, actor: Attribution(actor: actor, cause: cause).stored),
            payload: event.encodePayload(schemaVersion: UInt16(schema)))
        return Parsed(record: record, event: event, hash: value["hash"]?.stringValue)
    }
}
