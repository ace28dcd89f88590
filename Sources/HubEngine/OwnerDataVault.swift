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

    /// The animal's key, made on first use (`create`) when it has none; nil when it has none.
    /// - Throws: when the key file exists but cannot be read, or is not a key (not 32 bytes): it is
    ///   never replaced then, since a new key would leave what the old one sealed unreadable for good.
    func key(for animal: String, create: Bool) throws -> SymmetricKey? {
        let path = keyPath(animal)
        guard FileManager.default.fileExists(atPath: path) else {
            guard create else { return nil }
            let key = SymmetricKey(size: .bits256)
            // Whole or not at all (no empty key file on a full disk: that is `storage_full`).
            try DurableFile.write(key.withUnsafeBytes { Array($0) }, to: path, directory: directory, mode: 0o600)
            return key
        }
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw HubError.failed("the owner key \(path) cannot be read: \(error.localizedDescription)")
        }
        guard data.count == 32 else { throw HubError.failed("the owner key \(path) is \(data.count) bytes, not 32") }
        return SymmetricKey(data: data)
    }

    /// `value` sealed with the animal's key (already sealed values and nil pass through).
    public func seal(_ value: String?, animal: String) throws -> String? {
        guard let value, !value.isEmpty, !Self.isSealed(value) else { return value }
        guard let key = try key(for: animal, create: true) else { return value }
        let box = try AES.GCM.seal(Data(value.utf8), using: key, authenticating: Data(animal.utf8))
        guard let combined = box.combined else { throw HubError.failed("cannot seal owner data") }
        return Self.prefix + combined.base64EncodedString()
    }

    /// What one owner field reads as.
    public enum Field: Sendable, Equatable {
        /// The plain text (opened, or logged before sealing).
        case text(String)
        /// Sealed, and the animal's key is not in this data directory: erased (or not copied here).
        case keyMissing
        /// Sealed, and the key or the sealed value cannot be read: why.
        case unreadable(String)
    }

    /// The field opened with the animal's key; nil when there is none.
    public func read(_ value: String?, animal: String) -> Field? {
        guard let value else { return nil }
        guard Self.isSealed(value) else { return .text(value) }
        let key: SymmetricKey?
        do { key = try self.key(for: animal, create: false) } catch { return .unreadable("\(error)") }
        guard let key else { return .keyMissing }
        guard let data = Data(base64Encoded: String(value.dropFirst(Self.prefix.count))),
            let box = try? AES.GCM.SealedBox(combined: data),
            let plain = try? AES.GCM.open(box, using: key, authenticating: Data(animal.utf8))
        else { return .unreadable("the sealed value does not open with the owner key \(keyPath(animal)) (damaged, or another key)") }
        return .text(String(decoding: plain, as: UTF8.self))
    }

    /// An admission's owner contact data as it reads now.
    public enum Owner: Sendable, Equatable {
        /// Opened (each field nil when not recorded).
        case opened(name: String?, address: String?, phone: String?)
        /// Sealed, and the animal's key is not in this data directory.
        case keyMissing
        /// Sealed, and it cannot be read: why (the first field that failed).
        case unreadable(String)
    }

    /// The admission's owner name, address and phone, read; nil when none was recorded.
    public func owner(of admission: Admission) -> Owner? {
        let fields = [admission.ownerName, admission.ownerAddress, admission.ownerPhone].map { read($0, animal: admission.animal) }
        guard fields.contains(where: { $0 != nil }) else { return nil }
        var texts: [String?] = []
        for field in fields {
            switch field {
            case .unreadable(let why)?: return .unreadable(why)
            case .keyMissing?: return .keyMissing
            case .text(let text)?: texts.append(text)
            case nil: texts.append(nil)
            }
        }
        return .opened(name: texts[0], address: texts[1], phone: texts[2])
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
