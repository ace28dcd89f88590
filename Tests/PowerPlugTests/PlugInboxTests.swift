import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import PowerPlug

/// The connection's inbox: messages in order, reads held while it is full, the end after the
/// messages before it, cancellation.
@Suite struct PlugInboxTests {
    /// Counts the reads that reach the socket's side of the pipeline.
    final class ReadCounter: ChannelOutboundHandler, Sendable {
        typealias OutboundIn = Never
        let count = Atomic<Int>(0)
        func read(context: ChannelHandlerContext) {
            count.add(1, ordering: .relaxed)
            context.read()
        }
    }

    func connection() async throws -> (NIOAsyncTestingChannel, PlugInbox, ReadCounter) {
        let channel = NIOAsyncTestingChannel()
        let inbox = PlugInbox()
        let reads = ReadCounter()
        try await channel.pipeline.addHandler(reads)
        try await channel.pipeline.addHandler(PlugInboxHandler(inbox))
        return (channel, inbox, reads)
    }

    @Test func aFullInboxHoldsTheReadsUntilTheSessionHasTakenItsMessages() async throws {
        let (channel, inbox, reads) = try await connection()
        let messages = (0..<PlugInbox.highWater).map { PlugMessage.status(manual: $0 % 3 == 0, on: $0 % 2 == 0) }
        for message in messages { try await channel.writeInbound(message) }
        channel.read()
        try await channel.testingEventLoop.executeInContext {}
        #expect(reads.count.load(ordering: .relaxed) == 0, "a read while the inbox is full reaches the socket")
        var taken: [PlugMessage] = []
        for _ in 0..<messages.count - 1 { taken.append(try #require(try await inbox.next())) }
        try await channel.testingEventLoop.executeInContext {}
        #expect(reads.count.load(ordering: .relaxed) == 0)
        taken.append(try #require(try await inbox.next()))
        #expect(taken == messages)
        try await eventually("the held read issued") { reads.count.load(ordering: .relaxed) == 1 }
        // Below the bound, reads go through.
        try await channel.writeInbound(PlugMessage.status(manual: false, on: true))
        channel.read()
        try await eventually("a read with room") { reads.count.load(ordering: .relaxed) == 2 }
        #expect(try await inbox.next() == .status(manual: false, on: true))
    }

    @Test func theMessagesBeforeAnErrorAreTakenThenTheErrorIsThrown() async throws {
        let (channel, inbox, _) = try await connection()
        try await channel.writeInbound(PlugMessage.status(manual: false, on: true))
        try await channel.writeInbound(PlugMessage.activations([nil]))
        channel.pipeline.fireErrorCaught(PlugSessionError.silence(seconds: 2))
        #expect(try await inbox.next() == .status(manual: false, on: true))
        #expect(try await inbox.next() == .activations([nil]))
        await #expect {
            try await inbox.next()
        } throws: {
            "\($0)" == "no status from the plug for 2 s"
        }
        #expect(!channel.isActive, "the error closed the connection")
    }

    @Test func aClosedConnectionEndsTheMessages() async throws {
        let (channel, inbox, _) = try await connection()
        try await channel.writeInbound(PlugMessage.status(manual: true, on: true))
        try await channel.close()
        #expect(try await inbox.next() == .status(manual: true, on: true))
        #expect(try await inbox.next() == nil)
    }

    @Test func cancellingTheWaitThrowsAndClosesTheConnection() async throws {
        let (channel, inbox, _) = try await connection()
        let waiting = Task { try await inbox.next() }
        try await Task.sleep(for: .milliseconds(50))  // most likely waiting by now; either way it must end
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        try await eventually("the connection closed") { !channel.isActive }
    }
}
