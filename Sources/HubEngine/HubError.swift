/// Errors the hub reports to a person: one clear line each.
public enum HubError: Error, CustomStringConvertible {
    case usage(String)
    case failed(String)

    public var description: String {
        switch self {
        case .usage(let m), .failed(let m): return m
        }
    }
}
