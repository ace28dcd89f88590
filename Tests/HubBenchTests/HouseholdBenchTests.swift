import BrokerHarness
import Foundation
import HubBench
import Testing

/// `hub-bench household` as a person runs it, briefly: a real `hub run`, its own mosquitto, the
/// simulators; the figures it prints must hang together.
@Suite struct HouseholdBenchTests {
    @Test func perDayFiguresAndTheAmplificationFollowFromTheCounters() throws {
        let from = HouseholdCounters(events: 10, eventBytes: 3_000, writeBytes: 40_960, fsyncs: 5, deviceBytes: 1_000_000, cpuSeconds: 1)
        let to = HouseholdCounters(events: 110, eventBytes: 33_000, writeBytes: 450_560, fsyncs: 95, deviceBytes: 1_600_000, cpuSeconds: 4)
        let half = HouseholdPeriod(label: "mean per day", from: from, to: to, simulatedDays: 0.5, peakRSSKiB: 30_720)
        #expect(half.eventsPerDay == 200)
        #expect(half.eventBytesPerDay == 60_000)
        #expect(half.writeBytesPerDay == 819_200)
        #expect(half.fsyncsPerDay == 180)
        #expect(half.deviceBytesPerDay == 1_200_000)
        #expect(half.cpuSecondsPerDay == 6)
        #expect(half.writeAmplification == 20)
        #expect(half.row == "| mean per day | 200 | 60000 | 819200 | 180 | 1200000 | 20.00x | 6.0 | 30.0 MiB |")
        let noDevice = HouseholdPeriod(
            label: "day 1", from: HouseholdCounters(), to: HouseholdCounters(events: 1, eventBytes: 9),
            simulatedDays: 1, peakRSSKiB: 0)
        #expect(noDevice.writeAmplification == nil)
        #expect(noDevice.row.contains("| not found | - |"))
        #expect(throws: HouseholdClock.Invalid.self) { try HouseholdClock(dayMinutes: 14) }
        #expect(try HouseholdClock(dayMinutes: 15).speed == 96)
    }

    @Test(.timeLimit(.minutes(3))) func aBriefRunPrintsConsistentFigures() throws {
        guard let bench = builtExecutable("hub-bench"), builtExecutable("hub") != nil else {
            throw BrokerHarnessError("hub-bench and hub must be built (swift build)")
        }
        let dir = FileManager.default.temporaryDirectory.path + "/household-bench-" + UUID().uuidString.prefix(8)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: bench)
        // 0.008 of a 60-minute day (24x, so a busy machine keeps up): a 29-second window, one command.
        p.arguments = [
            "household", "--day-minutes", "60", "--days", "0.008", "--dir", dir, "--base-port", "\(26000 + Int.random(in: 0..<2000))"
        ]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let notes = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "hub-bench household failed:\n\(notes)\n\(printed)")
        #expect(!FileManager.default.fileExists(atPath: dir), "the bench removes its directory")

        #expect(printed.contains("one simulated day = 60 real minutes (24x)"))
        let row = try #require(printed.split(separator: "\n").first { $0.hasPrefix("| mean per day |") }, "no mean row in:\n\(printed)")
        let cells = row.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        // period, events, event bytes, hub wrote, fsyncs, device wrote, amplification, CPU s, peak RSS
        try #require(cells.count == 9, "\(row)")
        let events = try #require(Int(cells[1])), eventBytes = try #require(Int(cells[2])), written = try #require(Int(cells[3]))
        #expect(events > 0)
        #expect(eventBytes > events * 100, "an event's JSON is over 100 bytes")
        #expect(written > 0)
        #expect(try #require(Int(cells[4])) > 0, "fsyncs")
        #expect(try #require(Double(cells[7])) > 0, "CPU seconds")
        if cells[5] != "not found" {
            let device = try #require(Int(cells[5]))
            let amplification = try #require(Double(cells[6].dropLast()))
            #expect(device > 0)
            #expect(
                abs(amplification - Double(device) / Double(eventBytes)) <= 0.01 * amplification + 0.01,
                "amplification \(amplification) is not device \(device) / event bytes \(eventBytes)")
        } else {
            #expect(printed.contains("Device counters: not found:"))
        }
        #expect(printed.contains("| switch commands sent (one every 18.00 s real) | 1 |"), "\(printed)")
        #expect(printed.contains("| dropped (not confirmed within 10 s) | 0 |"), "\(printed)")
    }
}
