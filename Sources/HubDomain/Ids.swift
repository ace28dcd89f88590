/// Identifier rules shared by devices and animals: `[A-Za-z0-9_-]{1,64}`.
public enum Identifier {
    /// The longest id, in characters.
    public static let maxLength = 64

    /// True when `id` matches `[A-Za-z0-9_-]{1,64}`.
    public static func isValid(_ id: String) -> Bool {
        var count = 0
        for byte in id.utf8 {
            count += 1
            if count > maxLength { return false }
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                return false
            }
        }
        return count > 0
    }
}
