import Foundation
import HubLog
import HubPostgres
import PostgresHarness
import Testing

/// TLS to PostgreSQL with libpq's `sslmode`, against a real server with `ssl = on` and a
/// certificate for `localhost` only, signed by an authority of the test's own.
@Suite(.serialized) struct PostgresTLSTests {
    @Test func sslModeAndRootCertificateComeFromTheURLThenThePGVariables() throws {
        let url = try PostgresLocation(
            url: "postgres://hub@db:5432/log?sslmode=verify-full&sslrootcert=/etc/hub/ca%20one.crt", environment: [:])
        #expect(url.tls == .verifyFull && url.rootCertificate == "/etc/hub/ca one.crt")
        #expect(url.description == "postgres://hub@db:5432/log?sslmode=verify-full")
        let env = try PostgresLocation(url: "postgres://hub@db/log", environment: ["PGSSLMODE": "require", "PGSSLROOTCERT": "/ca.crt"])
        #expect(env.tls == .require && env.rootCertificate == "/ca.crt")
        let urlWins = try PostgresLocation(url: "postgres://hub@db/log?sslmode=disable", environment: ["PGSSLMODE": "require"])
        #expect(urlWins.tls == .disable)
        #expect(try PostgresLocation(url: "postgres://hub@db/log", environment: [:]).tls == .prefer, "libpq's default")
        let problems: [(String, [String: String], String)] = [
            (
                "postgres://hub:secret@db/log?sslmode=always", [:],
                "sslmode always is not one of disable, prefer, require, verify-ca, verify-full"
            ),
            ("postgres://hub:secret@db/log", ["PGSSLMODE": "on"], "PGSSLMODE on is not one of"),
            ("postgres://hub:secret@db/log?application_name=x", [:], "URL parameter application_name is not supported"),
            ("postgres://hub:secret@db/log?sslmode=", [:], "sslmode has no value")
        ]
        for (text, environment, said) in problems {
            #expect(
                performing: { try PostgresLocation(url: text, environment: environment) },
                throws: { error in
                    "\(error)".contains(said) && !"\(error)".contains("secret")
                })
        }
    }

    @Test func verifiedTLSCarriesTheLogAndAWrongAuthorityOrNameIsRefused() async throws {
        guard PostgresServer.binaries() != nil else { return }
        let server = try PostgresServer.start(tlsNames: ["localhost"])
        defer { server.stop() }
        let authority = try #require(server.certificates?.authority)
        let database = String(try server.createDatabase().split(separator: "/").last!)
        func url(host: String, _ parameters: String) -> String {
            "postgres://\(server.user)@\(host):\(server.port)/\(database)?\(parameters)"
        }
        func encryptedConnections() throws -> Int {
            Int(
                try server.psql(
                    "SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.datname = '\(database)' AND s.ssl AND a.pid <> pg_backend_pid()",
                    database: database
                ).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        }

        // verify-full against the name the certificate carries: the log works, every connection encrypted.
        let full = try await PostgresEventStore.open(
            location: PostgresLocation(url: url(host: "localhost", "sslmode=verify-full&sslrootcert=\(authority)")))
        _ = try await full.append(request("s", [event(1)], commandId: "tls-1"))
        #expect(full.lastSequence == 1)
        #expect(try encryptedConnections() == 3, "writer, reader and listener all on TLS")
        await full.close()

        // verify-ca checks the authority only, so the address (not in the certificate) is accepted...
        let byAddress = try await PostgresEventStore.open(
            location: PostgresLocation(url: url(host: "127.0.0.1", "sslmode=verify-ca&sslrootcert=\(authority)")), readOnly: true)
        #expect(byAddress.lastSequence == 1)
        await byAddress.close()
        // ...and require checks nothing but still encrypts.
        let required = try await PostgresEventStore.open(
            location: PostgresLocation(url: url(host: "127.0.0.1", "sslmode=require")), readOnly: true)
        #expect(try encryptedConnections() == 3)
        await required.close()

        // verify-full to an address the certificate does not name: refused, saying why.
        await #expect(
            performing: {
                try await PostgresEventStore.open(
                    location: PostgresLocation(url: url(host: "127.0.0.1", "sslmode=verify-full&sslrootcert=\(authority)")))
            },
            throws: { error in
                let text = "\(error)"
                return text.contains("does not name the host") && text.contains("cannot open the event log")
                    && text.contains("sslmode=verify-full")
            })
        // An authority that did not sign the server's certificate: refused.
        let stranger = try TestCertificates.makeAuthority(in: server.directory.appendingPathComponent("stranger"))
        await #expect(
            performing: {
                try await PostgresEventStore.open(
                    location: PostgresLocation(url: url(host: "localhost", "sslmode=verify-ca&sslrootcert=\(stranger)")))
            }, throws: { "\($0)".contains("certificate was refused") })
        // A root certificate file that is not one: said before connecting.
        await #expect(
            performing: {
                try await PostgresEventStore.open(
                    location: PostgresLocation(url: url(host: "localhost", "sslmode=verify-full&sslrootcert=/etc/hostname")))
            }, throws: { "\($0)".contains("sslrootcert /etc/hostname: cannot read certificates") })
        // Nothing was written by the refused attempts.
        #expect(
            try server.psql("SELECT last_seq FROM hub_log_head", database: database).trimmingCharacters(in: .whitespacesAndNewlines) == "1")
    }

    @Test func requireAgainstAServerWithoutTLSIsRefusedAndPreferFallsBack() async throws {
        guard let place = try LogPlace.fresh(.postgres) else { return }
        await #expect(
            performing: {
                try await PostgresEventStore.open(location: PostgresLocation(url: place.url! + "?sslmode=require"))
            }, throws: { "\($0)".contains("the server does not accept TLS connections") })
        let plain = try await PostgresEventStore.open(location: PostgresLocation(url: place.url! + "?sslmode=prefer"))
        _ = try await plain.append(request("s", [event(1)]))
        #expect(plain.lastSequence == 1)
        await plain.close()
    }
}
