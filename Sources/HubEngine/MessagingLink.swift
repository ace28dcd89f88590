/// A surface's link to a message broker, as the engine and the other surfaces see it: whether it is
/// up and how much it carried, for metrics, `/readyz` and the console. The MQTT surface provides it.
public protocol MessagingLink: Sendable {
    /// Whether the link is connected now.
    var isConnected: Bool { get }
    /// Messages carried since the link was made.
    var traffic: MessagingTraffic { get }
}

/// Messages a broker link carried.
public struct MessagingTraffic: Sendable, Equatable {
    /// Messages received from the broker.
    public var received: UInt64
    /// Messages published (sent, or queued while disconnected).
    public var published: UInt64
    /// Messages received that nobody took: the client's consumer had stopped reading (at shutdown).
    public var dropped: UInt64

    /// Creates a count.
    public init(received: UInt64, published: UInt64, dropped: UInt64 = 0) {
        self.received = received
        self.published = published
        self.dropped = dropped
    }
}
