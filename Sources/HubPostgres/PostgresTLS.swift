import HubLog
import NIOSSL
import PostgresNIO

/// TLS to PostgreSQL: libpq's `sslmode` made into postgres-nio's settings, and TLS failures said in
/// a sentence that names the mode and what to change.
enum PostgresTLS {
    /// The connection's TLS for `location` (TCP; a Unix socket never uses TLS).
    ///
    /// - Throws: ``EventLogError/invalid(_:)`` when the `sslrootcert` file cannot be read as certificates.
    static func settings(_ location: PostgresLocation) throws -> PostgresConnection.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch location.tls {
        case .disable: return .disable
        case .prefer, .require: configuration.certificateVerification = .none
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .verifyFull: configuration.certificateVerification = .fullVerification
        }
        if let file = location.rootCertificate, location.tls == .verifyCA || location.tls == .verifyFull {
            do {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file))
            } catch {
                throw EventLogError.invalid("\(location): sslrootcert \(file): cannot read certificates from it (\(error))")
            }
        }
        let context: NIOSSLContext
        do { context = try NIOSSLContext(configuration: configuration) } catch {
            throw EventLogError.invalid("\(location): cannot set up TLS: \(error)")
        }
        return location.tls == .prefer ? .prefer(context) : .require(context)
    }

    /// A sentence for a failure of TLS itself, or nil for any other error.
    static func reason(_ error: PSQLError) -> String? {
        if error.code == .sslUnsupported {
            return
                "the server does not accept TLS connections (sslmode requires TLS; turn ssl on in postgresql.conf, or use sslmode=prefer or disable)"
        }
        guard let underlying = error.underlying else { return nil }
        let text = String(describing: underlying)
        if text.contains("CERTIFICATE_VERIFY_FAILED") || text.contains("handshakeFailed") {
            return "the server's certificate was refused (\(text)): check sslrootcert and that the certificate names the host"
        }
        if underlying is NIOSSLExtraError {
            return "the server's certificate does not name the host connected to (\(text)); sslmode=verify-ca checks the authority only"
        }
        return nil
    }
}
