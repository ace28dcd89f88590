import Foundation
import HubApp
import HubDomain
import HubEngine
import HubHTTP
import HubHistory
import HubMQTT
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `pages` open event streams (`/console/events`, each read on its own thread) while `rate`
/// commands a second switch devices through the command path for `seconds`: command k switches
/// `dev-(k mod devices)` on (off in the second round). For each command and each page, the time
/// from the command's start to the first frame showing that device confirmed in that state.
struct LiveUpdateBench {
    let port: Int
    let pages: Int
    let rate: Int
    let seconds: Int
    let devices: Int

    struct Result {
        var commands = 0, failedCommands = 0, expected = 0, received = 0, reloads = 0
        var p50 = 0.0, p99 = 0.0, max = 0.0
        /// How long the command path took to answer (decide, append with its fsync, fold): p50 and p99.
        var answerP50 = 0.0, answerP99 = 0.0
    }

    /// What was sent and what arrived, shared by the command loop and the readers.
    final class Ledger: Sendable {
        struct Sent { var k: Int; var state: String; var at: ContinuousClock.Instant }
        struct State {
            var sent: [String: Sent] = [:]
            var latencies: [Double] = []
            var answered: [Double] = []
            var reloads = 0, failedCommands = 0, readersDone = 0
            var stop = false
        }
        let state = Mutex(State())
    }

    func run(_ commands: CommandService) async throws -> Result {
        let ledger = Ledger()
        var streams: [(fd: Int32, rest: [UInt8], chunked: Bool)] = []
        do {
            for _ in 0..<pages { streams.append(try BenchHTTP.openStream(port: port, path: "/console/events")) }
        } catch {
            for s in streams { close(s.fd) }
            throw error
        }
        for stream in streams {
            let thread = Thread {
                Self.read(stream, ledger); ledger.state.withLock { $0.readersDone += 1 }
            }
            thread.start()
        }
        try await Task.sleep(for: .milliseconds(500))  // every stream subscribed
        let total = rate * seconds
        let start = ContinuousClock.now
        await withTaskGroup(of: Void.self) { group in
            for k in 0..<total {
                let due = start + .microseconds(Int64(k) * 1_000_000 / Int64(rate))
                try? await Task.sleep(until: due, clock: .continuous)
                let device = "dev-\(k % devices)", on = (k / devices) % 2 == 0
                ledger.state.withLock { $0.sent[device] = Ledger.Sent(k: k, state: on ? "on" : "off", at: .now) }
                group.addTask {
                    let started = ContinuousClock.now
                    let answer = await commands.execute(.switchDevice(id: device, target: on ? .on : .off), actor: "bench")
                    let took = (ContinuousClock.now - started).inSeconds
                    ledger.state.withLock { $0.answered.append(took) }
                    if case .ok = answer {} else { ledger.state.withLock { $0.failedCommands += 1 } }
                }
            }
        }
        let failed = ledger.state.withLock { $0.failedCommands }
        let expected = (total - failed) * pages
        let deadline = ContinuousClock.now + .seconds(3)
        while ledger.state.withLock({ $0.latencies.count }) < expected && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        ledger.state.withLock { $0.stop = true }
        while ledger.state.withLock({ $0.readersDone }) < streams.count { try await Task.sleep(for: .milliseconds(20)) }
        let (latencies, answered, reloads) = ledger.state.withLock { ($0.latencies.sorted(), $0.answered.sorted(), $0.reloads) }
        var result = Result(commands: total, failedCommands: failed, expected: expected, received: latencies.count, reloads: reloads)
        if !latencies.isEmpty {
            result.p50 = latencies[latencies.count / 2]
            result.p99 = latencies[min(latencies.count - 1, latencies.count * 99 / 100)]
            result.max = latencies.last!
        }
        if !answered.isEmpty {
            result.answerP50 = answered[answered.count / 2]
            result.answerP99 = answered[min(answered.count - 1, answered.count * 99 / 100)]
        }
        return result
    }

    /// One page: reads frames until told to stop; a `device` frame showing a commanded device
    /// confirmed (`switch` as sent, nothing pending) records that command's latency, once.
    static func read(_ stream: (fd: Int32, rest: [UInt8], chunked: Bool), _ ledger: Ledger) {
        defer { close(stream.fd) }
        var body = Dechunker(chunked: stream.chunked)
        var pending = body.feed(stream.rest)
        var seen = Set<Int>()
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while !ledger.state.withLock({ $0.stop }) {
            while let end = BenchHTTP.find([10, 10], in: pending) {
                frame(String(decoding: pending[..<end], as: UTF8.self), ledger, &seen)
                pending.removeSubrange(...(end + 1))
            }
            let n = chunk.withUnsafeMutableBytes { recv(stream.fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            if n > 0 { pending += body.feed(chunk[0..<n]) }
        }
    }

    static func frame(_ text: String, _ ledger: Ledger, _ seen: inout Set<Int>) {
        var event = "message", data = ""
        for line in text.split(separator: "\n") {
            if line.hasPrefix("event:") { event = line.dropFirst(6).trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("data:") { data += line.dropFirst(5).trimmingCharacters(in: .whitespaces) }
        }
        if event == "reload" { ledger.state.withLock { $0.reloads += 1 } }
        guard event == "device", let json = try? JSONValue.parse(data), let id = json["id"]?.stringValue,
            let state = json["switch"]?.stringValue?.lowercased(), json["pending"]?.isNull ?? true
        else { return }
        let now = ContinuousClock.now
        ledger.state.withLock { ledger in
            guard let sent = ledger.sent[id], sent.state == state, seen.insert(sent.k).inserted else { return }
            ledger.latencies.append((now - sent.at).inSeconds)
        }
    }

}
