import Crypto
import DriverAPI
import Foundation
import _CryptoExtras

/// The TP-Link account's login a KLAP plug checks, read from the file the `credentials_file`
/// setting names: a JSON object `{"username": "...", "password": "..."}`.
package struct KasaKLAPCredentials: Sendable, Equatable {
    package let username: String
    package let password: String

    package init(username: String, password: String) {
        self.username = username
        self.password = password
    }

    /// KLAP v2's hash of the login: SHA-256(SHA-1(username) ‖ SHA-1(password)).
    package var authHash: [UInt8] {
        Array(
            SHA256.hash(data: Array(Insecure.SHA1.hash(data: Data(username.utf8))) + Array(Insecure.SHA1.hash(data: Data(password.utf8)))))
    }

    /// Reads the file at `path` for `owner` (`device "p1"`, named in the error).
    /// - Throws: A `DriverError` that names the file and what is wrong with it (never its content).
    package static func read(path: String, for owner: String) throws -> KasaKLAPCredentials {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw DriverError("kasa credentials_file \"\(path)\" of \(owner) cannot be read: \(error.localizedDescription)")
        }
        guard case .object(let members)? = try? JSONValue.parse(String(decoding: data, as: UTF8.self)),
            case .string(let username)? = members.first(where: { $0.0 == "username" })?.1,
            case .string(let password)? = members.first(where: { $0.0 == "password" })?.1, !username.isEmpty
        else {
            throw DriverError(
                "kasa credentials_file \"\(path)\" of \(owner) must hold a JSON object "
                    + #"{"username": "...", "password": "..."} (the TP-Link account's e-mail and password)"#)
        }
        return KasaKLAPCredentials(username: username, password: password)
    }
}

/// One KLAP session's keys, derived from both handshake seeds and the login's hash, and its
/// request sequence number (python-kasa, `kasa/transports/klaptransport.py`, `KlapTransportV2` and
/// `KlapEncryptionSession`, describe the protocol): AES-128-CBC with PKCS#7 padding, the IV the
/// session's 12 bytes and the sequence number (big-endian, signed 32 bits), each request signed
/// with SHA-256 over the signature key, the sequence number and the cipher text.
package struct KasaKLAPSession: Sendable {
    /// The AES-128 key's bytes (`SymmetricKey` is not `Sendable`; one is made per use).
    private let key: [UInt8]
    private let ivPrefix: [UInt8]
    private let signatureKey: [UInt8]
    /// The sequence number of the latest request sealed (the handshake gives its start).
    package private(set) var sequence: Int32

    /// Derives the session from handshake1's seeds (the client's `local`, the device's `remote`) and the login's hash.
    package init(local: [UInt8], remote: [UInt8], authHash: [UInt8]) {
        let seeds = local + remote + authHash
        key = Array(Array(SHA256.hash(data: Array("lsk".utf8) + seeds)).prefix(16))
        let iv = Array(SHA256.hash(data: Array("iv".utf8) + seeds))
        ivPrefix = Array(iv.prefix(12))
        sequence = iv.suffix(4).reduce(0) { Int32(bitPattern: UInt32(bitPattern: $0) << 8 | UInt32($1)) }
        signatureKey = Array(SHA256.hash(data: Array("ldk".utf8) + seeds).prefix(28))
    }

    /// What the device answers to handshake1 after its seed: SHA-256(local ‖ remote ‖ auth hash).
    package static func deviceProof(local: [UInt8], remote: [UInt8], authHash: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: local + remote + authHash))
    }

    /// What the client sends in handshake2: SHA-256(remote ‖ local ‖ auth hash).
    package static func clientProof(local: [UInt8], remote: [UInt8], authHash: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: remote + local + authHash))
    }

    /// The next sequence number and the request body for `plain`: the signature (32 bytes) and the cipher text.
    package mutating func seal(_ plain: [UInt8]) throws -> (sequence: Int32, body: [UInt8]) {
        sequence &+= 1
        return (sequence, try Self.seal(plain, sequence: sequence, key: key, ivPrefix: ivPrefix, signatureKey: signatureKey))
    }

    /// The body the device sends back for request `sequence` (the same layout and IV).
    package func sealReply(_ plain: [UInt8], sequence: Int32) throws -> [UInt8] {
        try Self.seal(plain, sequence: sequence, key: key, ivPrefix: ivPrefix, signatureKey: signatureKey)
    }

    /// Whether `body` carries the signature of request `sequence` (checked by the device on each request).
    package func isSigned(_ body: [UInt8], sequence: Int32) -> Bool {
        body.count > 32 && Array(body.prefix(32)) == Self.signature(Array(body.dropFirst(32)), sequence: sequence, key: signatureKey)
    }

    /// The plain text of a body (signature and cipher text) sealed for `sequence`.
    /// - Throws: `KasaProtocolError.klap` when the body is too short or does not decrypt.
    package func open(_ body: [UInt8], sequence: Int32) throws -> [UInt8] {
        guard body.count >= 48, (body.count - 32) % 16 == 0 else { throw KasaProtocolError.klap("a reply of \(body.count) bytes") }
        do {
            let plain = try AES._CBC.decrypt(body.dropFirst(32), using: SymmetricKey(data: key), iv: try Self.iv(ivPrefix, sequence))
            return Array(plain)
        } catch {
            throw KasaProtocolError.klap("a reply that does not decrypt with the session's key")
        }
    }

    private static func seal(
        _ plain: [UInt8], sequence: Int32, key: [UInt8], ivPrefix: [UInt8], signatureKey: [UInt8]
    ) throws -> [UInt8] {
        let cipher = Array(try AES._CBC.encrypt(plain, using: SymmetricKey(data: key), iv: try iv(ivPrefix, sequence)))
        return signature(cipher, sequence: sequence, key: signatureKey) + cipher
    }

    private static func iv(_ prefix: [UInt8], _ sequence: Int32) throws -> AES._CBC.IV {
        try AES._CBC.IV(ivBytes: prefix + bigEndian(sequence))
    }

    private static func signature(_ cipher: [UInt8], sequence: Int32, key: [UInt8]) -> [UInt8] {
        Array(SHA256.hash(data: key + bigEndian(sequence) + cipher))
    }

    static func bigEndian(_ value: Int32) -> [UInt8] {
        let bits = UInt32(bitPattern: value)
        return [UInt8(bits >> 24), UInt8(bits >> 16 & 0xFF), UInt8(bits >> 8 & 0xFF), UInt8(bits & 0xFF)]
    }
}
