/// `hub_append`: the stored procedure that commits one group commit in one round trip (see
/// docs/architecture.md, "The PostgreSQL log").
///
/// The writer keeps the head (last sequence and chain hash) and the batch's stream versions it
/// last saw, decides every request and computes the records and their chain hashes itself, and
/// sends all of it as arrays in one `CALL`. In one transaction the procedure then:
///
/// 1. locks the head row (`FOR UPDATE`: appends are serialised, sequences gapless);
/// 2. with a fence, checks the lease (`FOR SHARE`) is still this holder's, with this token and
///    unexpired; otherwise returns `fenced` having written nothing;
/// 3. compares the head with the one the writer expected; a difference means another writer
///    appended since, so the writer's versions may be stale: returns `moved` (and the head it
///    found) having written nothing;
/// 4. inserts the new command ids into `hub_commands`, whose primary key makes idempotency the
///    table's, not a cache's. When one was appended before (even long ago), the insert is undone
///    (a `unique_violation`, caught in its own block) and all of the batch's ids found are
///    returned as `duplicates`, nothing written. Catching the violation costs less than looking
///    every id up first: it is one index probe per id instead of two. Only a batch with an id
///    that is not inserted (a request without events) looks its ids up first;
/// 5. inserts the records, moves the head, `pg_notify`s the followers and `COMMIT`s inside the
///    procedure, so the answer (`committed`) leaves the server only after the commit is durable
///    (`synchronous_commit` on).
///
/// The writer re-decides after `moved` (with fresh versions) or `duplicates` (answering those as
/// duplicates) and calls again.
enum PostgresAppendProcedure {
    /// Created (or replaced) with the tables, in the schema set-up's transaction.
    static let create = """
        CREATE OR REPLACE PROCEDURE hub_append(
            INOUT o_outcome text, INOUT o_head_seq bigint, INOUT o_head_hash bytea,
            INOUT o_holder text, INOUT o_token bigint, INOUT o_live boolean,
            INOUT o_known_ids text[], INOUT o_known_first bigint[], INOUT o_known_last bigint[], INOUT o_known_version bigint[],
            p_ids text[], p_new_hash bytea,
            p_seq bigint[], p_stream text[], p_version bigint[], p_type text[], p_schema integer[], p_ts bigint[],
            p_command text[], p_has_command boolean[], p_actor text[], p_payload bytea[], p_hash bytea[],
            p_c_id text[], p_c_first bigint[], p_c_last bigint[], p_c_version bigint[])
        LANGUAGE plpgsql AS $$
        DECLARE
            v_seq bigint;
            v_hash bytea;
            v_holder text;
            v_token bigint;
            v_live boolean;
            v_rows bigint := coalesce(cardinality(p_seq), 0);
        BEGIN
            SELECT last_seq, chain_hash INTO v_seq, v_hash FROM hub_log_head WHERE id = 1 FOR UPDATE;
            IF v_seq IS NULL THEN
                RAISE EXCEPTION 'the hub_log_head row is missing';
            END IF;
            IF o_holder IS NOT NULL THEN
                SELECT holder, token, expires_at > now() INTO v_holder, v_token, v_live FROM hub_lease WHERE id = 1 FOR SHARE;
                IF v_holder IS DISTINCT FROM o_holder OR v_token IS DISTINCT FROM o_token OR v_live IS NOT TRUE THEN
                    o_outcome := 'fenced';
                    o_holder := coalesce(v_holder, '');
                    o_token := coalesce(v_token, 0);
                    o_live := coalesce(v_live, false);
                    RETURN;
                END IF;
            END IF;
            IF v_seq IS DISTINCT FROM o_head_seq OR v_hash IS DISTINCT FROM o_head_hash THEN
                o_outcome := 'moved';
                o_head_seq := v_seq;
                o_head_hash := v_hash;
                RETURN;
            END IF;
            IF cardinality(p_ids) > coalesce(cardinality(p_c_id), 0) THEN
                -- Ids of requests without events are not inserted: look them all up.
                SELECT array_agg(command_id), array_agg(first_seq), array_agg(last_seq), array_agg(coalesce(stream_version, -1))
                  INTO o_known_ids, o_known_first, o_known_last, o_known_version
                  FROM hub_commands WHERE command_id = ANY(p_ids);
                IF o_known_ids IS NOT NULL THEN
                    o_outcome := 'duplicates';
                    RETURN;
                END IF;
            END IF;
            IF v_rows > 0 THEN
                IF p_seq[1] <> v_seq + 1 OR p_seq[v_rows] <> v_seq + v_rows THEN
                    RAISE EXCEPTION 'records % to % do not follow the head %', p_seq[1], p_seq[v_rows], v_seq;
                END IF;
                BEGIN
                    INSERT INTO hub_commands (command_id, first_seq, last_seq, stream_version)
                        SELECT c.id, c.first, c.last, nullif(c.version, -1)
                        FROM unnest(p_c_id, p_c_first, p_c_last, p_c_version) AS c(id, first, last, version);
                EXCEPTION WHEN unique_violation THEN
                    SELECT array_agg(command_id), array_agg(first_seq), array_agg(last_seq), array_agg(coalesce(stream_version, -1))
                      INTO o_known_ids, o_known_first, o_known_last, o_known_version
                      FROM hub_commands WHERE command_id = ANY(p_ids);
                    o_outcome := 'duplicates';
                    RETURN;
                END;
                INSERT INTO hub_events (seq, stream, stream_version, type, schema_version, ts, command_id, actor, payload, chain_hash)
                    SELECT r.seq, r.stream, r.version, r.type, r.schema, r.ts, CASE WHEN r.has THEN r.command END, r.actor, r.payload, r.hash
                    FROM unnest(p_seq, p_stream, p_version, p_type, p_schema, p_ts, p_command, p_has_command, p_actor, p_payload, p_hash)
                      AS r(seq, stream, version, type, schema, ts, command, has, actor, payload, hash);
                UPDATE hub_log_head SET last_seq = v_seq + v_rows, chain_hash = p_new_hash WHERE id = 1;
                PERFORM pg_notify('\(PostgresSchema.channel)', (v_seq + v_rows)::text);
                COMMIT;
                o_head_seq := v_seq + v_rows;
                o_head_hash := p_new_hash;
            END IF;
            o_outcome := 'committed';
        END
        $$
        """
}
