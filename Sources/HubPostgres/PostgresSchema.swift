/// The tables the PostgreSQL event log keeps (created on first open by a writer; see docs/operations.md).
///
/// - `hub_events`: one row per record, `seq` gapless from 1, unique `(stream, stream_version)`, the
///   record's fields as `RecordFormat` encodes them, and `chain_hash`: the same SHA-256 chain hash
///   the segment store writes, so both backends give the same hashes for the same events.
/// - `hub_commands`: one row per command id ever appended (the primary key makes idempotency
///   permanent) with the original result.
/// - `hub_log_head`: one row with the last sequence and its chain hash. Every append locks it
///   (`SELECT ... FOR UPDATE`) in its transaction, so sequences are assigned one commit after
///   another, without gaps, by however many processes write; and checks it is the head the
///   writer decided against.
/// - `hub_lease`: one row naming the active hub of several sharing the log (hot standby): its
///   instance name, a fencing token raised on every acquisition, and when the lease expires (the
///   database's clock). An append by a store with a fence (``PostgresEventStore/fence(holder:token:)``)
///   checks it in the same transaction (see ``PostgresLease``).
/// - `hub_append`: the procedure every group commit is one call of (``PostgresAppendProcedure``);
///   replaced on every open for writing, so a newer hub brings its own.
enum PostgresSchema {
    /// The NOTIFY channel: the payload is the last committed sequence.
    static let channel = "hub_log"

    /// Run in one transaction, under an advisory lock so two hubs starting at once do not race.
    static let create: [String] = [
        "SELECT pg_advisory_xact_lock(7220177)",
        """
        CREATE TABLE IF NOT EXISTS hub_events (
            seq bigint PRIMARY KEY CHECK (seq >= 1),
            stream text NOT NULL,
            stream_version bigint NOT NULL CHECK (stream_version >= 0),
            type text NOT NULL,
            schema_version integer NOT NULL,
            ts bigint NOT NULL,
            command_id text,
            actor text NOT NULL,
            payload bytea NOT NULL,
            chain_hash bytea NOT NULL,
            UNIQUE (stream, stream_version)
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hub_commands (
            command_id text PRIMARY KEY,
            first_seq bigint NOT NULL,
            last_seq bigint NOT NULL,
            stream_version bigint
        )
        """,
        """
        CREATE TABLE IF NOT EXISTS hub_log_head (
            id integer PRIMARY KEY CHECK (id = 1),
            last_seq bigint NOT NULL,
            chain_hash bytea NOT NULL
        )
        """,
        "INSERT INTO hub_log_head (id, last_seq, chain_hash) VALUES (1, 0, '\\x\(String(repeating: "0", count: 64))'::bytea) ON CONFLICT (id) DO NOTHING",
        """
        CREATE TABLE IF NOT EXISTS hub_lease (
            id integer PRIMARY KEY CHECK (id = 1),
            holder text NOT NULL,
            token bigint NOT NULL,
            expires_at timestamptz NOT NULL
        )
        """,
        "INSERT INTO hub_lease (id, holder, token, expires_at) VALUES (1, '', 0, '-infinity') ON CONFLICT (id) DO NOTHING",
        PostgresAppendProcedure.create
    ]

    static let selectColumns = "seq, stream, stream_version, type, schema_version, ts, command_id, actor, payload, chain_hash"
}
