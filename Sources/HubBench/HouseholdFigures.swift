import Foundation

/// The counters `hub-bench household` reads from one process at one instant: what the log holds
/// (events seen on the event feed and their JSON bytes), what the process wrote
/// (`/proc/<pid>/io` `write_bytes`), the log's fdatasyncs (the hub's `/metrics`), what the block
/// device under its data directory wrote (`/sys/dev/block/<major>:<minor>/stat`, sectors x 512;
/// nil when no block device could be found) and its CPU time (`utime + stime`).
public struct HouseholdCounters: Sendable, Equatable {
    /// Events seen on the event feed.
    public var events: Int
    /// The JSON bytes of those events.
    public var eventBytes: Int
    /// `write_bytes` of `/proc/<pid>/io`: what the process wrote.
    public var writeBytes: Int
    /// The log's fdatasyncs from `/metrics`; nil when not read.
    public var fsyncs: Int?
    /// Bytes the data directory's block device wrote (sectors x 512); nil when no device was found.
    public var deviceBytes: Int?
    /// The process's CPU time (`utime + stime`), in seconds.
    public var cpuSeconds: Double

    /// Counters, zero unless given.
    public init(
        events: Int = 0, eventBytes: Int = 0, writeBytes: Int = 0, fsyncs: Int? = nil,
        deviceBytes: Int? = nil, cpuSeconds: Double = 0
    ) {
        self.events = events
        self.eventBytes = eventBytes
        self.writeBytes = writeBytes
        self.fsyncs = fsyncs
        self.deviceBytes = deviceBytes
        self.cpuSeconds = cpuSeconds
    }
}

/// What happened between two readings of the counters, over `simulatedDays` of the household's
/// traffic, and the same figures per simulated day.
public struct HouseholdPeriod: Sendable, Equatable {
    /// The row's name ("day 1", "mean per day").
    public let label: String
    /// How many simulated days the period covered.
    public let simulatedDays: Double
    /// The counters at the end minus those at the start (nil where either is nil).
    public let delta: HouseholdCounters
    /// The process's peak RSS (`VmHWM`) in KiB at the end of the period.
    public let peakRSSKiB: Int

    /// - Parameters:
    ///   - label: The row's name ("day 1", "mean per day").
    ///   - from: The counters at the period's start.
    ///   - to: The counters at its end.
    ///   - simulatedDays: How many simulated days it covered (more than 0).
    ///   - peakRSSKiB: `VmHWM` at the end.
    public init(label: String, from: HouseholdCounters, to: HouseholdCounters, simulatedDays: Double, peakRSSKiB: Int) {
        self.label = label
        self.simulatedDays = simulatedDays
        self.peakRSSKiB = peakRSSKiB
        func minus(_ a: Int?, _ b: Int?) -> Int? { if let a, let b { a - b } else { nil } }
        delta = HouseholdCounters(
            events: to.events - from.events, eventBytes: to.eventBytes - from.eventBytes,
            writeBytes: to.writeBytes - from.writeBytes, fsyncs: minus(to.fsyncs, from.fsyncs),
            deviceBytes: minus(to.deviceBytes, from.deviceBytes),
            cpuSeconds: to.cpuSeconds - from.cpuSeconds)
    }

    func perDay(_ value: Int) -> Int { Int((Double(value) / simulatedDays).rounded()) }
    /// Events per simulated day.
    public var eventsPerDay: Int { perDay(delta.events) }
    /// Event JSON bytes per simulated day.
    public var eventBytesPerDay: Int { perDay(delta.eventBytes) }
    /// Bytes the process wrote per simulated day.
    public var writeBytesPerDay: Int { perDay(delta.writeBytes) }
    /// fdatasyncs per simulated day; nil without the figure.
    public var fsyncsPerDay: Int? { delta.fsyncs.map(perDay) }
    /// Bytes the block device wrote per simulated day; nil without the figure.
    public var deviceBytesPerDay: Int? { delta.deviceBytes.map(perDay) }
    /// CPU seconds per simulated day.
    public var cpuSecondsPerDay: Double { delta.cpuSeconds / simulatedDays }

    /// Device bytes over event bytes (nil without a device figure or without events).
    public var writeAmplification: Double? {
        guard let device = delta.deviceBytes, delta.eventBytes > 0 else { return nil }
        return Double(device) / Double(delta.eventBytes)
    }

    /// The process's own written bytes over event bytes.
    public var processAmplification: Double? {
        delta.eventBytes > 0 ? Double(delta.writeBytes) / Double(delta.eventBytes) : nil
    }

    /// The header of ``row``'s table.
    public static let header = """
        | period | events | event bytes | hub wrote (write_bytes) | fsyncs | device wrote | write amplification (device / event) | CPU s | peak RSS |
        |---|---:|---:|---:|---:|---:|---:|---:|---:|
        """

    /// One Markdown row, figures per simulated day, bytes as whole numbers (so a reader or a test
    /// can recompute the amplification from the row).
    public var row: String {
        let fsyncs = fsyncsPerDay.map(String.init) ?? "-"
        let device = deviceBytesPerDay.map(String.init) ?? "not found"
        let amplification = writeAmplification.map { String(format: "%.2fx", $0) } ?? "-"
        return "| \(label) | \(eventsPerDay) | \(eventBytesPerDay) | \(writeBytesPerDay) | \(fsyncs) | \(device) | \(amplification) | "
            + String(format: "%.1f", cpuSecondsPerDay) + " | " + String(format: "%.1f MiB", Double(peakRSSKiB) / 1024) + " |"
    }
}

/// How a household day is compressed: `dayMinutes` real minutes hold one simulated day, so every
/// time constant of the traffic (report periods, the readings' maximum interval, moves, schedules,
/// the commands' spacing) is divided by ``speed``.
public struct HouseholdClock: Sendable, Equatable {
    /// Real minutes per simulated day (1440 is real time).
    public let dayMinutes: Int

    /// - Throws: ``Invalid`` unless `dayMinutes` is 15 to 1440 (at 15 the plugs report every
    ///   0.104 s, near the simulators' 0.1 s floor).
    public init(dayMinutes: Int) throws {
        guard (15...1440).contains(dayMinutes) else {
            throw Invalid(message: "--day-minutes must be 15 to 1440 (1440 is real time), not \(dayMinutes)")
        }
        self.dayMinutes = dayMinutes
    }

    /// Why a clock was refused, as a sentence naming the option.
    public struct Invalid: Error, CustomStringConvertible { public let message: String; public var description: String { message } }

    /// Simulated seconds per real second.
    public var speed: Double { 1440 / Double(dayMinutes) }

    /// A simulated duration in real seconds.
    public func real(_ simulatedSeconds: Double) -> Double { simulatedSeconds / speed }

    /// Real seconds per simulated day.
    public var daySeconds: Double { Double(dayMinutes) * 60 }
}
