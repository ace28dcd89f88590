import DriverAPI
import Foundation
import NIOCore
import NIOPosix

/// Makes drivers for the seed's TCP Wi-Fi power plug (`"driver": "powerplug"`).
///
/// Settings: `host` (required), `port` (230), `slots` (10), `read_timeout` seconds (5),
/// `activation_check` seconds (60, how often the plug's list is re-read), `connect_timeout` seconds (3).
public struct PowerPlugDriverFactory: DriverFactory {
    /// The driver name devices are registered with.
    public let name = "powerplug"
    private let group: any EventLoopGroup

    /// All drivers made here share `group` (one connection each, no thread per plug).
    public init(group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton) {
        self.group = group
    }

    /// A driver for one plug from its settings.
    /// - Throws: A `DriverError` naming the bad setting.
    public func make(configuration: DriverConfiguration) throws -> any Driver {
        PowerPlugDriver(settings: try PowerPlugDriver.Settings(configuration), group: group)
    }
}

/// One plug: a persistent TCP connection, reconnected with back-off, that reports status, availability
/// and the plug's stored activations, and sends switch and activation commands.
public actor PowerPlugDriver: Driver {
    /// The driver's settings, checked.
    public struct Settings: Sendable, Equatable {
        /// The plug's host name or address.
        public var host: String
        /// Its TCP port.
        public var port: Int
        /// How many activation slots it has.
        public var slots: Int
        /// Seconds to wait for an answer before the connection counts as broken.
        public var readTimeout: Double
        /// Seconds between re-reads of the plug's activation list.
        public var activationCheck: Double
        /// Seconds a connection attempt may take.
        public var connectTimeout: Double

        /// Settings with the reference plug's defaults.
        public init(
            host: String, port: Int = 230, slots: Int = 10, readTimeout: Double = 5,
            activationCheck: Double = 60, connectTimeout: Double = 3
        ) {
            self.host = host
            self.port = port
            self.slots = slots
            self.readTimeout = readTimeout
            self.activationCheck = activationCheck
            self.connectTimeout = connectTimeout
        }

        /// Reads the settings of `configuration`, with errors naming the bad key.
        public init(_ configuration: DriverConfiguration) throws {
            let s = try DriverSettings(
                configuration,
                allowed: [
                    "host", "port", "slots", "read_timeout", "activation_check", "connect_timeout"
                ])
            self.init(
                host: try s.string("host"),
                port: try s.int("port", default: PowerPlugProtocol.defaultPort, in: 1...65535),
                slots: try s.int("slots", default: PowerPlugProtocol.defaultSlots, in: 1...255),
                readTimeout: try s.double("read_timeout", default: 5, in: 0.1...3600),
                activationCheck: try s.double("activation_check", default: 60, in: 0.1...86400),
                connectTimeout: try s.double("connect_timeout", default: 3, in: 0.1...600))
        }
    }

    /// Reconnect back-off: first delay, cap.
    static let backoffStart = 0.5
    static let backoffCap = 30.0
    /// A plug that leaves this many list requests unanswered is treated as broken.
    static let maxPendingLists = 16

    /// Switching, activations stored on the plug, and the MQTT scope (none).
    public nonisolated let capabilities: DriverCapabilities
    private let settings: Settings
    private let group: any EventLoopGroup

    private var context: (any DriverContext)?
    private var started = false
    private var stopped = false
    /// The open connection, if any.
    private var channel: (any Channel)?
    /// Why there is no connection (for "not connected: ..." errors).
    private var notConnectedReason: String
    /// Generation of each 'A' request sent on this connection, oldest first (replies come in order).
    private var pendingLists: [Int] = []
    /// Bumped by every activations write; list replies to requests of an older generation are stale.
    private var writeGeneration = 0
    /// What the plug holds (every slot), as last read back or last written; nil = unknown.
    private var plugSlots: [DeviceActivation?]?
    private var lastSwitch: (on: Bool, manual: Bool)?
    /// The state a switch command asked for, until a status shows it (nil: none outstanding).
    private var switchSent: Bool?
    private var lastAvailable: Bool?
    private var sawStatus = false

    init(settings: Settings, group: any EventLoopGroup) {
        self.settings = settings
        self.group = group
        capabilities = DriverCapabilities(storesActivations: true, activationSlots: settings.slots)
        notConnectedReason = "not yet connected to \(settings.host):\(settings.port)"
    }

    private var address: String { "\(settings.host):\(settings.port)" }

    // MARK: Driver

    /// Connects, follows the plug and reconnects with back-off until cancelled (which closes the
    /// connection at once: the session's wait for the plug's next message ends).
    public func run(context: any DriverContext) async throws {
        guard !started else { throw DriverError("powerplug driver for \(context.deviceId) already ran") }
        started = true
        self.context = context
        // The loop is here, not in a function of its own: the task keeps the memory of its
        // deepest calls as long as the device runs.
        var delay = Self.backoffStart
        while !stopped && !Task.isCancelled {
            let (good, reason) = await session()
            if stopped || Task.isCancelled { break }
            notConnectedReason = reason
            await setAvailable(false, reason)
            if good { delay = Self.backoffStart }
            do { try await Task.sleep(for: .seconds(delay)) } catch { break }
            delay = min(delay * 2, Self.backoffCap)
        }
        stopped = true
        self.context = nil
    }

    /// Sends a switch or the activation list over the open connection.
    /// - Throws: A `DriverError` when not connected or when the list does not fit the plug's slots.
    public func execute(_ command: DriverCommand) async throws {
        switch command {
        case .setSwitch(let on):
            let channel = try connectedChannel()
            switchSent = on
            try await send(try PlugCommand.setSwitch(on: on).encoded(), on: channel)
        case .writeActivations(let list):
            try await writeActivations(list)
        }
    }

    // MARK: Commands

    private func connectedChannel() throws -> any Channel {
        guard let channel, !stopped else { throw DriverError("not connected: \(notConnectedReason)") }
        return channel
    }

    private func send(_ bytes: [UInt8], on channel: any Channel) async throws {
        do {
            try await channel.writeAndFlush(channel.allocator.buffer(bytes: bytes)).get()
        } catch {
            throw DriverError("could not send to the plug at \(address): \(describe(error))")
        }
    }

    private func writeActivations(_ list: [DeviceActivation]) async throws {
        guard list.count <= settings.slots else {
            throw DriverError("\(list.count) activations do not fit the plug's \(settings.slots) slots")
        }
        let channel = try connectedChannel()
        let now = Int64(Date().timeIntervalSince1970)
        let target = list.map { PowerPlugProtocol.rolledForward($0, now: now) }
        var current = plugSlots ?? []
        let known = plugSlots != nil
        var bytes: [UInt8] = []
        for (index, activation) in target.enumerated() where !known || current[index] != activation {
            try bytes.append(contentsOf: PlugCommand.update(index: UInt8(index), activation).encoded())
        }
        // Surplus slots from the highest index down, so the plug's shifting never moves a slot we still need.
        for index in stride(from: settings.slots - 1, through: target.count, by: -1) where !known || current[index] != nil {
            try bytes.append(contentsOf: PlugCommand.delete(index: UInt8(index)).encoded())
        }
        bytes.append(contentsOf: try PlugCommand.list.encoded())

        current = target.map { Optional($0) } + Array(repeating: nil, count: settings.slots - target.count)
        plugSlots = current
        writeGeneration += 1
        pendingLists.append(writeGeneration)
        try await send(bytes, on: channel)
    }

    private func requestList() {
        guard let channel else { return }
        if pendingLists.count >= Self.maxPendingLists {
            channel.pipeline.fireErrorCaught(PlugSessionError.unansweredLists(pendingLists.count))
            channel.close(promise: nil)
            return
        }
        pendingLists.append(writeGeneration)
        channel.writeAndFlush(channel.allocator.buffer(bytes: [PowerPlugProtocol.typeActivations]), promise: nil)
    }

    // MARK: Reports

    private func report(_ observation: Observation) async {
        guard !stopped, let context else { return }
        await context.report(observation)
    }

    private func setAvailable(_ available: Bool, _ reason: String) async {
        if let change = availability(available, reason) { await report(change) }
    }

    /// The availability report when it changes, else nil.
    private func availability(_ available: Bool, _ reason: String) -> Observation? {
        guard lastAvailable != available else { return nil }
        lastAvailable = available
        return .availability(available: available, reason: reason)
    }

    /// Takes one message in and returns what to report, in order (usually nothing: a status that
    /// changed nothing). Synchronous, so the session's long-lived task keeps no frame of it: a task
    /// keeps the memory of its deepest calls until it ends.
    private func take(_ message: PlugMessage) -> [Observation] {
        switch message {
        case .status(let manual, let on):
            var reports: [Observation] = []
            if !sawStatus {
                sawStatus = true
                if let change = availability(true, "connected to \(address)") { reports.append(change) }
            }
            // The status that shows a switch command's state confirms it even when nothing changed
            // (ON while already on): report it, so the hub can close the pending command. A status
            // the plug pushed before it took the command in shows the old state: not a confirmation.
            if lastSwitch?.on != on || lastSwitch?.manual != manual || switchSent == on {
                if switchSent == on { switchSent = nil }
                lastSwitch = (on, manual)
                reports.append(.switchState(on: on, manual: manual))
            }
            return reports
        case .activations(let slots):
            // Unasked lists cannot be placed in time; ignore them.
            guard !pendingLists.isEmpty else { return [] }
            let generation = pendingLists.removeFirst()
            guard generation == writeGeneration else { return [] }  // read before a later write: stale
            plugSlots = slots
            return [.activations(slots.compactMap { $0 })]
        }
    }

    // MARK: Sessions

    /// One connection, from connect to loss. Returns whether the plug spoke (a good session) and why it ended.
    private func session() async -> (good: Bool, reason: String) {
        let connection: (channel: any Channel, inbox: PlugInbox)
        do {
            connection = try await PlugConnector.connect(settings: settings, group: group)
        } catch is CancellationError {
            return (false, "stopped")
        } catch {
            return (false, "cannot connect to \(address): \(describe(error))")
        }
        let (channel, inbox) = connection
        if stopped || Task.isCancelled {
            try? await channel.close().get()
            return (false, "stopped")
        }
        self.channel = channel
        pendingLists = []
        plugSlots = nil
        lastSwitch = nil
        sawStatus = false
        requestList()

        // The list is re-read on an event-loop timer, not by a task sleeping per plug: an idle plug
        // keeps no task of its own besides the one running it. The timer enters the actor in a short
        // task of its own every `activation_check` (60 s), held by no one.
        let interval = TimeAmount.nanoseconds(Int64(settings.activationCheck * 1e9))
        let ticker = channel.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [weak self] _ in
            guard let self else { return }
            Task { await self.requestList() }
        }
        var reason = "the plug at \(address) closed the connection"
        do {
            while !stopped, !Task.isCancelled, let message = try await inbox.next() {
                for observation in take(message) { await report(observation) }
            }
        } catch {
            reason = describe(error)
        }
        ticker.cancel()
        let good = sawStatus
        self.channel = nil
        pendingLists = []
        try? await channel.close().get()
        return (good, reason)
    }

    private func describe(_ error: any Error) -> String {
        if case ChannelError.connectTimeout = error {
            return "no answer within \(formatSeconds(settings.connectTimeout))"
        }
        switch error {
        case let error as PlugSessionError:
            return error.description
        case let error as IOError:
            return describeErrno(error.errnoCode, fallback: "\(error)")
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first?.error { return describe(first) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve \(settings.host)" }
            return "\(error)"
        default:
            return "\(error)"
        }
    }

    private func describeErrno(_ code: Int32, fallback: String) -> String {
        switch code {
        case ECONNREFUSED: return "connection refused"
        case ECONNRESET: return "connection reset by the plug"
        case ETIMEDOUT: return "connection timed out"
        case EHOSTUNREACH: return "host unreachable"
        case ENETUNREACH: return "network unreachable"
        case EPIPE: return "connection broken"
        default: return fallback
        }
    }
}
