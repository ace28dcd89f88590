/// Every incoming message of an ``MQTTClient``, in arrival order: an AsyncStream whose iterator tells
/// the client's network thread each message it takes, so that the thread waits (instead of dropping)
/// while `MQTTOptions.inboundBuffer` messages are waiting to be taken.
///
/// Single consumer: iterate it from one long-lived task (`for await message in client.messages`).
/// Cancelling the task that iterates it finishes it (as an AsyncStream) after the messages already
/// buffered; from then on messages are dropped and counted in ``MQTTClient/traffic`` (`dropped`).
/// Leaving a loop over it (`break`) without cancelling keeps it open: a later iterator reads on,
/// and meanwhile a message that finds the buffer full is dropped and counted.
public struct MQTTMessages: AsyncSequence, Sendable {
    /// One message.
    public typealias Element = MQTTMessage
    /// Never throws: it ends when the client stops or fails.
    public typealias Failure = Never

    let stream: AsyncStream<MQTTMessage>
    let window: InboundWindow

    /// An iterator; while one is alive (or none was made yet) the network thread waits for room.
    public func makeAsyncIterator() -> Iterator {
        Iterator(base: stream.makeAsyncIterator(), consumer: Consumer(window))
    }

    /// Takes the messages one at a time, and makes room for the network thread with each.
    public struct Iterator: AsyncIteratorProtocol {
        /// One message.
        public typealias Element = MQTTMessage
        /// Never throws.
        public typealias Failure = Never

        var base: AsyncStream<MQTTMessage>.Iterator
        let consumer: Consumer

        /// The next message; nil once the client stopped or failed (or the consuming task was cancelled) and the buffer is empty.
        public mutating func next() async -> MQTTMessage? {
            guard let message = await base.next() else { return nil }
            consumer.window.taken()
            return message
        }

        /// The next message, without leaving the caller's actor; nil at the end (see ``next()``).
        public mutating func next(isolation actor: isolated (any Actor)?) async -> MQTTMessage? {
            guard let message = await base.next(isolation: actor) else { return nil }
            consumer.window.taken()
            return message
        }
    }

    /// Alive as long as some copy of one iterator: tells the window when a consumer comes and goes.
    final class Consumer {
        let window: InboundWindow

        init(_ window: InboundWindow) {
            self.window = window
            window.consumerArrived()
        }

        deinit { window.consumerLeft() }
    }
}
