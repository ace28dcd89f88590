import Crypto
import Foundation
import HubDomain
import HubLog

/// Keeps animal owners' contact data erasable without rewriting the log ("crypto-shredding"):
/// owner name, address and phone are sealed with a per-animal key (AES-256-GCM) before they are
/// logged, and the keys live outside the log in `<data-dir>/keys/`. Erasing an owner's data deletes
/// that animal's key: the sealed values in the log, in exports and in backups of the log can no
/// longer be read, while every other fact about the animal stays and the hash chain is untouched.
public struct OwnerDataVault: Sendable {
    /// The key directory, `<data-dir>/keys`.
    public let directory: String
    static let prefix = "sealed:v1:"

    /// The vault of a data directory (nothing is made until a key is needed).
    public init(dataDirectory: String) {
        directory = dataDirectory + "/keys"
    }

    func keyPath(_ animal: String) -> String { directory + "/animal-" + animal + ".key" }

    /// True when `value` is a sealed text (`sealed:v1:` prefix) rather than plain.
    public static func isSealed(_ value: String) -> Bool { value.hasPrefix(prefix) }

    /// The animal's key, made on first use.
    func key(for animal: String, create: Bool) throws -> SymmetricKey? {
        if let data = FileManager.default.contents(atPath: keyPath(animal)), data.count == 32 {
            return SymmetricKey(data: data)
        }
        guard create else { return nil }
        let key = SymmetricKey(size: .bits256)
        // Whole or not at all (no empty key file on a full disk: that is `storage_full`).
        try DurableFile.write(key.withUnsafeBytes { Array($0) }, to: keyPath(animal), directory: directory, mode: 0o600)
        return key
    }

    /// `value` sealed with the animal's key (already sealed values and nil pass through).
    public func seal(_ value: String?, animal: String) throws -> String? {
        guard let value, !value.isEmpty, !Self.isSealed(value) else { return value }
        guard let key = try key(for: animal, create: true) else { return value }
        let box = try AES.GCM.seal(Data(value.utf8), using: key, authenticating: Data(animal.utf8))
        guard let combined = box.combined else { throw HubError.failed("cannot seal owner data") }
        return Self.prefix + combined.base64EncodedString()
    }

    /// The plain value; nil when the key was erased (or the value is damaged). Plain values pass through.
    public func open(_ value: String?, animal: String) -> String? {
        guard let value else { return nil }
        guard Self.isSealed(value) else { return value }
        guard let key = try? key(for: animal, create: false),
            let data = Data(base64Encoded: String(value.dropFirst(Self.prefix.count))),
            let box = try? AES.GCM.SealedBox(combined: data),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Data(animal.utf8))
        else { return nil }
        return String(decoding: plain, as: UTF8.self)
    }

    /// An admission with its owner fields sealed.
    public func sealOwner(_ a: Admission) throws -> Admission {
        var a = a
        a.ownerName = try seal(a.ownerName, animal: a.animal)
        a.ownerAddress = try seal(a.ownerAddress, animal: a.animal)
        a.ownerPhone = try seal(a.ownerPhone, animal: a.animal)
        return a
    }

    /// Deletes the animal's key (overwritten first). Idempotent.
    /// - Throws: when the key file exists and cannot be overwritten or deleted (the owner data
    ///   would still be readable): the caller must say so.
    public func erase(animal: String) throws {
        let path = keyPath(animal)
        guard FileManager.default.fileExists(atPath: path) else { return }
        do {
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            try handle.write(contentsOf: Data(repeating: 0, count: 32))
            try handle.synchronize()
            try handle.close()
            try FileManager.default.removeItem(atPath: path)
        } catch {
            throw HubError.failed("the owner key \(path) could not be deleted: \(error)")
        }
    }

    /// True while the animal's key exists (not yet erased).
    public func hasKey(animal: String) -> Bool { FileManager.default.fileExists(atPath: keyPath(animal)) }
}
