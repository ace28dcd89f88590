import HubLog
import NIOCore
import PostgresNIO

/// One call of ``PostgresAppendProcedure``: the head the writer expects, its fence, the command
/// ids to look up, and the records and command rows as columns (one array per column).
struct PostgresAppendCall {
    var headSequence: UInt64
    var headHash: [UInt8]
    var fence: (holder: String, token: Int64)?
    var ids: [String] = []
    var newHash: [UInt8]
    var seq: [Int64] = [], stream: [String] = [], version: [Int64] = [], type: [String] = [], schema: [Int32] = []
    var ts: [Int64] = [], command: [String] = [], hasCommand: [Bool] = [], actor: [String] = []
    var payload: [ByteBuffer] = [], hash: [ByteBuffer] = []
    var commandIds: [String] = [], commandFirst: [Int64] = [], commandLast: [Int64] = [], commandVersion: [Int64] = []

    init(headSequence: UInt64, headHash: [UInt8], fence: (holder: String, token: Int64)?) {
        self.headSequence = headSequence
        self.headHash = headHash
        self.fence = fence
        newHash = headHash
    }

    var rows: Int { seq.count }

    mutating func add(_ record: EventRecord, hash chainHash: [UInt8]) {
        seq.append(Int64(record.sequence))
        stream.append(record.stream)
        version.append(Int64(record.streamVersion))
        type.append(record.type)
        schema.append(Int32(record.schemaVersion))
        ts.append(record.timestamp)
        command.append(record.causation.commandId ?? "")
        hasCommand.append(record.causation.commandId != nil)
        actor.append(record.causation.actor)
        payload.append(ByteBuffer(bytes: record.payload))
        hash.append(ByteBuffer(bytes: chainHash))
        newHash = chainHash
    }

    mutating func add(command id: String, _ result: AppendResult) {
        commandIds.append(id)
        commandFirst.append(Int64(result.firstSequence))
        commandLast.append(Int64(result.lastSequence))
        commandVersion.append(result.streamVersion.map { Int64($0) } ?? -1)
    }

    /// The `CALL`, its parameters typed so PostgreSQL picks the one procedure.
    var query: PostgresQuery {
        var b = PostgresBindings(capacity: 27)
        b.append(Int64(headSequence))
        b.append(ByteBuffer(bytes: headHash))
        b.append(fence?.holder)
        b.append(fence?.token)
        b.append(ids)
        b.append(ByteBuffer(bytes: newHash))
        b.append(seq); b.append(stream); b.append(version); b.append(type); b.append(schema); b.append(ts)
        b.append(command); b.append(hasCommand); b.append(actor); b.append(payload); b.append(hash)
        b.append(commandIds); b.append(commandFirst); b.append(commandLast); b.append(commandVersion)
        let sql = """
            CALL hub_append(NULL::text, $1::bigint, $2::bytea, $3::text, $4::bigint, NULL::boolean, \
            NULL::text[], NULL::bigint[], NULL::bigint[], NULL::bigint[], $5::text[], $6::bytea, \
            $7::bigint[], $8::text[], $9::bigint[], $10::text[], $11::integer[], $12::bigint[], \
            $13::text[], $14::boolean[], $15::text[], $16::bytea[], $17::bytea[], \
            $18::text[], $19::bigint[], $20::bigint[], $21::bigint[])
            """
        return PostgresQuery(unsafeSQL: sql, binds: b)
    }
}

/// What one ``PostgresAppendCall`` found.
enum PostgresAppendOutcome: Equatable {
    /// Written and durable (or nothing to write, and the writer's view confirmed): the head now.
    case committed(sequence: UInt64, hash: [UInt8])
    /// The lease is not this holder's, with this token, unexpired: who holds it. Nothing written.
    case fenced(holder: String, token: Int64, live: Bool)
    /// Another writer appended since: the head found. Nothing written.
    case moved(sequence: UInt64, hash: [UInt8])
    /// These command ids were appended before, with their original results. Nothing written.
    case duplicates([String: AppendResult])

    init(_ row: PostgresRow) throws {
        let (outcome, sequence, hash, holder, token, live, ids, first, last, version) = try row.decode(
            (String, Int64?, ByteBuffer?, String?, Int64?, Bool?, [String]?, [Int64]?, [Int64]?, [Int64]?).self)
        switch outcome {
        case "committed", "moved":
            guard let sequence, let hash else { throw EventLogError.invalid("hub_append answered \(outcome) without the head") }
            let head = UInt64(sequence), bytes = Array(hash.readableBytesView)
            self = outcome == "committed" ? .committed(sequence: head, hash: bytes) : .moved(sequence: head, hash: bytes)
        case "fenced":
            self = .fenced(holder: holder ?? "", token: token ?? 0, live: live ?? false)
        case "duplicates":
            let ids = ids ?? [], first = first ?? [], last = last ?? [], version = version ?? []
            guard ids.count == first.count, ids.count == last.count, ids.count == version.count else {
                throw EventLogError.invalid("hub_append answered duplicates with columns of different lengths")
            }
            var found: [String: AppendResult] = [:]
            for i in ids.indices {
                found[ids[i]] = AppendResult(
                    firstSequence: UInt64(first[i]), lastSequence: UInt64(last[i]),
                    streamVersion: version[i] < 0 ? nil : UInt64(version[i]), duplicate: true)
            }
            self = .duplicates(found)
        default:
            throw EventLogError.invalid("hub_append answered \(outcome)")
        }
    }
}
