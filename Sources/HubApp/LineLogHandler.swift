import HubEngine
import HubHTTP
import HubMQTT
import Logging

/// A swift-log handler that writes one line per message to a sink: what `hub` prints on standard
/// error (`hub: mqtt: connected to ...`), and what tests read back. Warnings and errors say so;
/// metadata follows the message as `key=value`.
public struct LineLogHandler: LogHandler {
    /// Messages below this level are dropped.
    public var logLevel: Logger.Level
    /// Metadata added to every message.
    public var metadata: Logger.Metadata = [:]
    /// Metadata computed at each message.
    public var metadataProvider: Logger.MetadataProvider?
    let prefix: String
    let sink: @Sendable (String) -> Void

    /// - Parameters:
    ///   - prefix: written before every line (`"hub: "`).
    ///   - level: the lowest level written.
    ///   - sink: receives each line, without a line break.
    public init(prefix: String = "", level: Logger.Level = .info, sink: @escaping @Sendable (String) -> Void) {
        self.prefix = prefix
        self.logLevel = level
        self.sink = sink
    }

    /// One metadata value.
    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one line for the message: prefix, level (warnings and errors), message, then `key=value` pairs.
    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let extra = event.metadata { all.merge(extra) { $1 } }
        let fields = all.sorted { $0.key < $1.key }.map { " \($0.key)=\($0.value)" }.joined()
        let level: String
        switch event.level {
        case .warning: level = "warning: "
        case .error, .critical: level = "error: "
        default: level = ""
        }
        sink(prefix + level + "\(event.message)" + fields)
    }
}
