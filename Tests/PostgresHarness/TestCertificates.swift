// Certificates for tests of TLS, made with the `openssl` command: a certificate authority of the
// test's own, and a server certificate it signs for the names given (DNS names and IP addresses).

import BrokerHarness
import Foundation

public struct TestCertificates: Sendable {
    /// The authority's certificate (PEM): what a client trusts with `sslrootcert`.
    public let authority: String
    /// The server's certificate (PEM), signed by the authority, and its private key.
    public let certificate: String
    public let key: String

    /// Makes an authority and a server certificate for `names` (`localhost`, `127.0.0.1`) in `directory`.
    public static func make(in directory: URL, names: [String] = ["localhost", "127.0.0.1"]) throws -> TestCertificates {
        let path = { (name: String) in directory.appendingPathComponent(name).path }
        let authority = try makeAuthority(in: directory)
        let subjectAltName = names.map { $0.allSatisfy { $0.isNumber || $0 == "." } ? "IP:\($0)" : "DNS:\($0)" }.joined(separator: ",")
        try """
        subjectAltName=\(subjectAltName)
        basicConstraints=critical,CA:FALSE
        keyUsage=critical,digitalSignature,keyEncipherment
        extendedKeyUsage=serverAuth
        """.write(toFile: path("server.ext"), atomically: true, encoding: .utf8)
        try openssl([
            "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", path("server.key"), "-out", path("server.csr"), "-subj", "/CN=\(names.first ?? "server")"
        ])
        try openssl([
            "x509", "-req", "-in", path("server.csr"), "-CA", authority, "-CAkey", path("ca.key"),
            "-CAcreateserial", "-days", "2", "-out", path("server.crt"), "-extfile", path("server.ext")
        ])
        return TestCertificates(authority: authority, certificate: path("server.crt"), key: path("server.key"))
    }

    /// Makes a self-signed authority in `directory` (`ca.crt`, `ca.key`) and returns its certificate's path.
    public static func makeAuthority(in directory: URL) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificate = directory.appendingPathComponent("ca.crt").path
        try openssl([
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", directory.appendingPathComponent("ca.key").path, "-out", certificate, "-days", "2",
            "-subj", "/CN=hub test authority \(UUID().uuidString.prefix(8))",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"
        ])
        return certificate
    }

    static func openssl(_ arguments: [String]) throws {
        guard let tool = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first(where: FileManager.default.isExecutableFile(atPath:)) else {
            throw PostgresHarnessError("the openssl command is not installed (Debian's openssl; scripts/setup-system installs it)")
        }
        let (status, output) = try runCapturing([tool] + arguments)
        guard status == 0 else { throw PostgresHarnessError("openssl \(arguments.first ?? "") failed: \(output)") }
    }
}
