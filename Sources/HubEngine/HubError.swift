/// Errors the hub reports to a person: one clear line each.
public enum HubError: Error, CustomStringConvertible {
    /// The command line was used wrongly (the message says how to use it).
    case usage(String)
    /// Something failed while running (the message says what and where).
    case failed(String)

    /// The message, as one line.
    public var description: String {
        switch self {
        case .usage(let m), .failed(let m): return m
        }
    }
}
