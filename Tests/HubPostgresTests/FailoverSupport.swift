import BrokerHarness
import Foundation
import MQTT
import Synchronization

/// One `hub run` process, its standard error kept in a file to wait on.
final class HubProcess: @unchecked Sendable {
    let process: Process
    let errPath: String
    let name: String

    init(hub: String, name: String, arguments: [String], errPath: String) throws {
        self.errPath = errPath
        self.name = name
        _ = FileManager.default.createFile(atPath: errPath, contents: nil)
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        process = try spawn {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: hub)
            process.arguments = arguments
            process.standardError = errors
            process.standardOutput = FileHandle.nullDevice
            return process
        }
    }

    var stderr: String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }

    /// Waits until its standard error says `text` (false: it did not within `timeout`, or exited).
    func waitFor(_ text: String, timeout: Double = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if stderr.contains(text) { return true }
            if !process.isRunning { return stderr.contains(text) }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    /// How many times its standard error says `text`.
    func count(_ text: String) -> Int { stderr.components(separatedBy: text).count - 1 }

    /// Waits until its standard error says `text` at least `times` times (false: not within `timeout`).
    func waitFor(_ text: String, times: Int, timeout: Double = 30) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if count(text) >= times { return true }
            if !process.isRunning { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Its exit status, or nil when it still runs after `timeout`.
    func waitExit(timeout: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            if Date() >= deadline { return nil }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return process.terminationStatus
    }

    /// Ends it whatever state it is in (the test's clean-up).
    func end() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGCONT)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

/// Two hubs, `a` (started first: active) and `b` (standby), sharing one PostgreSQL log and one broker,
/// each with its own data directory.
struct HubPair {
    let a: HubProcess
    let b: HubProcess
    let directory: String
    /// Each hub's HTTP port (`a`, `b`) when started with `http`.
    var httpPorts: [String: Int] = [:]

    /// - Parameters:
    ///   - keepAlive: The hubs' MQTT keep-alive in seconds (the broker drops a silent client after
    ///     1.5 times it, and publishes its will).
    ///   - http: Give each hub an HTTP listener on a port of its own (``httpPorts``).
    static func start(
        hub: String, root: String, url: String, brokerPort: Int, keepAlive: Int = 30, http: Bool = false
    ) async throws -> HubPair {
        let config = root + "/hub.json"
        // The Tasmota plug has no device behind it: what the hubs send it is seen on cmnd/plug/#.
        try
            #"{"devices":[{"id":"lamp","driver":"virtual","name":"Lamp"},{"id":"plug","driver":"tasmota","name":"Plug","config":{"topic":"plug"}}],"beacons":false,"mqtt":{"keepalive":\#(keepAlive)}}"#
            .write(toFile: config, atomically: true, encoding: .utf8)
        var ports: [String: Int] = [:]
        if http { for name in ["a", "b"] { ports[name] = try TestBroker.freePort() } }
        func launch(_ name: String) throws -> HubProcess {
            let dir = root + "/" + name
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            return try HubProcess(
                hub: hub, name: name,
                arguments: [
                    "run", "--data-dir", dir, "--log", url, "--config", config, "--instance", name,
                    "--mqtt-host", "127.0.0.1", "--mqtt-port", "\(brokerPort)"
                ] + (ports[name].map { ["--http", "127.0.0.1:\($0)"] } ?? ["--no-http"]), errPath: root + "/\(name).stderr")
        }
        let a = try launch("a")
        guard await a.waitFor("Ctrl-C stops") else {
            a.end()
            throw BrokerHarnessError("hub a did not start: \(a.stderr)")
        }
        let b = try launch("b")
        guard await b.waitFor("standby: instance b follows the log") else {
            a.end(); b.end()
            throw BrokerHarnessError("hub b did not wait as a standby: \(b.stderr)")
        }
        return HubPair(a: a, b: b, directory: root, httpPorts: ports)
    }

    func end() {
        a.end()
        b.end()
    }
}

/// A client sending `device/rename` commands with command ids (QoS 1), re-sending the same message
/// until it is answered `ok`, as docs/mqtt.md tells a client that needs every command carried out.
final class CommandClient: Sendable {
    let client: MQTTClient
    final class Received: Sendable {
        /// Every message received: topic and text, in order.
        let messages = Mutex<[(topic: String, text: String, at: Date)]>([])
    }
    let received = Received()
    private let reader: Task<Void, Never>

    init(port: Int) async throws {
        let client = try MQTTClient(
            options: MQTTOptions(port: port, clientId: "failover-\(UUID().uuidString.prefix(8))", cleanSession: true))
        self.client = client
        let received = self.received
        reader = Task {
            for await message in client.messages {
                let text = String(decoding: message.payload, as: UTF8.self)
                received.messages.withLock { $0.append((message.topic, text, Date())) }
            }
        }
        // cmnd/plug/#: what the hubs send the Tasmota plug of ``HubPair``.
        for filter in ["hub/response/#", "hub/status", "hub/status/active", "cmnd/plug/#"] { try client.subscribe(filter, qos: 1) }
        try client.start()
        try await client.waitUntilConnected(timeout: .seconds(5))
    }

    deinit { reader.cancel() }

    func stop() async { await client.stop() }

    /// The answers to command `id` received so far (the answer echoes `transaction`, set to the command id).
    func answers(_ id: String) -> [String] {
        received.messages.withLock {
            $0.filter { $0.topic == "hub/response/device/rename" && $0.text.contains(#""transaction":"\#(id)""#) }.map(\.text)
        }
    }

    /// When the first message on `topic` saying `text` that arrived after `date` arrived; nil when
    /// none did within `timeout` seconds.
    func waitFor(_ topic: String, _ text: String, after date: Date, timeout: Double) async -> Date? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let found = received.messages.withLock { $0.first { $0.topic == topic && $0.text == text && $0.at > date }?.at }
            if let found { return found }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return nil
    }

    /// How many messages saying one of `texts` arrived on `topic` after `date`.
    func count(_ topic: String, _ texts: Set<String>, after date: Date) -> Int {
        received.messages.withLock { $0.filter { $0.topic == topic && texts.contains($0.text) && $0.at > date }.count }
    }

    /// Waits until at least `times` messages saying one of `texts` arrived on `topic` after `date`
    /// (false: not within `timeout`).
    func waitForCount(_ topic: String, _ texts: Set<String>, _ times: Int, after date: Date, timeout: Double) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if count(topic, texts, after: date) >= times { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    /// The last message on `topic`.
    func last(_ topic: String) -> String? { received.messages.withLock { $0.last { $0.topic == topic }?.text } }

    /// Renames the lamp with command `id` until answered `ok`; returns when the `ok` arrived, nil if
    /// none within `timeout` seconds.
    func rename(_ id: String, timeout: Double = 20) async throws -> Date? {
        let message = Array(#"{"id":"lamp","name":"Lamp \#(id)","command_id":"\#(id)","transaction":"\#(id)"}"#.utf8)
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            try client.publish("hub/request/device/rename", message, qos: 1)
            let resend = Date().addingTimeInterval(0.5)
            while Date() < min(resend, deadline) {
                let ok = received.messages.withLock {
                    $0.first {
                        $0.topic == "hub/response/device/rename" && $0.text.contains(#""transaction":"\#(id)""#)
                            && $0.text.contains(#""status":"ok""#)
                    }?.at
                }
                if let ok { return ok }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        return nil
    }
}

/// A plain HTTP/1.1 GET to 127.0.0.1 (what a load balancer's health check does): the status and
/// body, or nil when the connection is refused.
func httpGet(port: Int, path: String) async -> (status: Int, body: String)? {
    await Task.detached { () -> (status: Int, body: String)? in
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return nil }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        guard send(fd, request, request.count, 0) == request.count else { return nil }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            bytes += buffer[0..<n]
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard let head = text.range(of: "\r\n\r\n"), let status = Int(text.split(separator: " ").dropFirst().first ?? "") else {
            return nil
        }
        return (status, String(text[head.upperBound...]))
    }.value
}
