import HubDomain
import HubEngine
import Logging
import MQTT
import ServiceLifecycle

extension MQTTSurface {
    /// The broker connection: on shutdown (last of the surface's services) it publishes `offline`
    /// and disconnects.
    public nonisolated var connection: some Service { MQTTConnectionService(surface: self) }
    /// Every logged event out on `<base>/events/...`, in log order (see `MQTTEventsPublisher`).
    public nonisolated var eventFeed: some Service { events }
    /// Retained state and discovery: after each (re)connect, on Home Assistant's `online`, and for
    /// every stream the log follower marks changed. Throws when the connection is dead for good.
    public nonisolated var statePublisher: some Service { MQTTStatePublisher(surface: self) }
    /// Commands in: routed, parsed, run through the command service in lanes, answered. First to
    /// stop: on shutdown it reads no more messages and answers those already taken in.
    public nonisolated var commandDispatch: some Service { MQTTCommandDispatch(surface: self) }
}

struct MQTTConnectionService: Service {
    let surface: MQTTSurface

    func run() async throws {
        try? await gracefulShutdown()  // cancelled or shut down: either way, say offline and go
        await surface.disconnect()
    }
}

struct MQTTStatePublisher: Service {
    let surface: MQTTSurface

    func run() async throws {
        try await cancelWhenGracefulShutdown {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await surface.followConnection() }
                group.addTask { await surface.publishStates() }
                group.addTask {
                    for await animal in surface.bridges.presenceChanges { surface.changed(stream: .animal(animal)) }
                }
                group.addTask {
                    for await _ in surface.announceRequests {
                        // Spread the load of many publishers answering Home Assistant at once.
                        try? await Task.sleep(for: .milliseconds(Int.random(in: 500...2500)))
                        await surface.republishAll()
                    }
                }
                // Until graceful shutdown cancels them all, or the connection fails for good.
                try await group.waitForAll()
            }
        }
    }
}

struct MQTTCommandDispatch: Service {
    let surface: MQTTSurface

    func run() async throws {
        var lanes: [AsyncStream<MQTTSurface.Work>.Continuation] = []
        var streams: [AsyncStream<MQTTSurface.Work>] = []
        for _ in 0..<MQTTSurface.laneCount {
            let (stream, continuation) = AsyncStream<MQTTSurface.Work>.makeStream(
                bufferingPolicy: .bufferingOldest(MQTTSurface.laneCapacity))
            lanes.append(continuation)
            streams.append(stream)
        }
        await withTaskGroup(of: Void.self) { group in
            for stream in streams {
                group.addTask { await CommandLane(surface: surface).run(stream) }
            }
            // Stop taking messages at shutdown; the lanes finish what they hold, each answered.
            // The stream is read directly in a task that graceful shutdown cancels, not through
            // `cancelOnGracefulShutdown()`: that sequence is a merge which carries every message
            // through a task of its own, one more hop while the command is acknowledged but not logged.
            let lanes = lanes
            await cancelWhenGracefulShutdown {
                for await message in surface.client.messages { surface.dispatch(message, lanes: lanes) }
            }
            for lane in lanes { lane.finish() }
        }
    }
}
