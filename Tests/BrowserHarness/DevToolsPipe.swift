import Foundation
import HubJSON
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The Chrome DevTools Protocol over `--remote-debugging-pipe`: JSON messages, each ended by a NUL
/// byte, written to the browser's fd 3 and read from its fd 4. One reader thread answers the calls
/// (matched by `id`) and keeps the events the harness looks at (page loads, console lines,
/// uncaught exceptions).
final class DevToolsPipe: Sendable {
    private let toBrowser: Int32
    private let fromBrowser: Int32
    private let state = Mutex(State())
    private let writing = Mutex(())

    private struct State {
        var nextId = 1
        var pending: [Int: (method: String, continuation: CheckedContinuation<JSONValue, any Error>)] = [:]
        /// Why the pipe is closed, once it is.
        var closed: String?
        /// How many times each event arrived, keyed by "session method".
        var eventCounts: [String: Int] = [:]
        /// The last lines each session's page logged (console calls, exceptions, log entries).
        var pageLog: [String: [String]] = [:]
        /// The messages of the dialogs each session's page opened (each accepted).
        var dialogs: [String: [String]] = [:]
    }

    /// - Parameters:
    ///   - toBrowser: the write end whose read end is the browser's fd 3.
    ///   - fromBrowser: the read end whose write end is the browser's fd 4.
    init(toBrowser: Int32, fromBrowser: Int32) {
        self.toBrowser = toBrowser
        self.fromBrowser = fromBrowser
        let thread = Thread { [self] in readLoop() }
        thread.name = "devtools-pipe"
        thread.start()
    }

    /// Sends `method` with `params` (to the page attached as `session`, if given) and returns the
    /// answer's `result`.
    /// - Throws: `BrowserError` when the browser answers with an error, does not answer within
    ///   `timeout`, or the pipe is closed.
    func call(
        _ method: String, _ params: JSONValue = [:], session: String? = nil,
        timeout: Duration = .seconds(10)
    ) async throws -> JSONValue {
        try await withCheckedThrowingContinuation { continuation in
            let id: Int? = state.withLock { state in
                if state.closed != nil { return nil }
                let id = state.nextId
                state.nextId += 1
                state.pending[id] = (method, continuation)
                return id
            }
            guard let id else {
                continuation.resume(throwing: BrowserError("\(method): \(closedReason)"))
                return
            }
            var message: [(String, JSONValue)] = [("id", .number(Double(id))), ("method", .string(method)), ("params", params)]
            if let session { message.append(("sessionId", .string(session))) }
            if let failure = write(Array(JSONValue.object(message).serialized().utf8) + [0]) {
                fail(id, BrowserError("\(method): cannot write to the browser: \(failure)"))
                return
            }
            Task { [self] in
                try? await Task.sleep(for: timeout)
                fail(id, BrowserError("\(method): no answer from the browser within \(timeout)"))
            }
        }
    }

    /// How many `method` events the page attached as `session` has sent so far.
    func eventCount(_ method: String, session: String) -> Int {
        state.withLock { $0.eventCounts[session + " " + method] ?? 0 }
    }

    /// The last lines the page attached as `session` logged, oldest first.
    func pageLog(session: String) -> [String] {
        state.withLock { $0.pageLog[session] ?? [] }
    }

    /// The messages of the dialogs (`confirm`, `alert`) the page attached as `session` opened.
    func dialogs(session: String) -> [String] {
        state.withLock { $0.dialogs[session] ?? [] }
    }

    var closedReason: String {
        state.withLock { $0.closed } ?? "open"
    }

    /// Closes our ends of the pipes; calls still waiting fail.
    func shutDown(_ reason: String) {
        failAll(reason)
        writing.withLock { _ in _ = close(toBrowser) }
    }

    // MARK: - Writing and reading

    private func write(_ bytes: [UInt8]) -> String? {
        writing.withLock { _ in
            if let closed = state.withLock({ $0.closed }) { return closed }
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(toBrowser, $0.baseAddress! + offset, bytes.count - offset) }
                if n < 0 {
                    if errno == EINTR { continue }
                    return String(cString: strerror(errno))
                }
                offset += n
            }
            return nil
        }
    }

    private func readLoop() {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fromBrowser, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            buffer += chunk[0..<n]
            while let end = buffer.firstIndex(of: 0) {
                handle(Array(buffer[..<end]))
                buffer.removeSubrange(...end)
            }
        }
        close(fromBrowser)
        failAll("the browser closed its DevTools pipe (it exited)")
    }

    private func handle(_ bytes: [UInt8]) {
        guard let message = try? JSONValue.parse(bytes) else { return }
        if let id = message["id"]?.doubleValue.map(Int.init) {
            guard let call = state.withLock({ $0.pending.removeValue(forKey: id) }) else { return }
            if let error = message["error"] {
                let text = error["message"]?.stringValue ?? error.serialized()
                let data = error["data"]?.stringValue.map { " (\($0))" } ?? ""
                call.continuation.resume(throwing: BrowserError("\(call.method): the browser answered: \(text)\(data)"))
            } else {
                call.continuation.resume(returning: message["result"] ?? [:])
            }
            return
        }
        guard let method = message["method"]?.stringValue else { return }
        let session = message["sessionId"]?.stringValue ?? ""
        if method == "Page.javascriptDialogOpening" {
            // A person pressing OK: the page waits for the answer, so it is sent from here (its
            // own answer is not waited for).
            let text = message["params"]?["message"]?.stringValue ?? ""
            let id = state.withLock { state -> Int in
                state.dialogs[session, default: []].append(text)
                defer { state.nextId += 1 }
                return state.nextId
            }
            let accept: JSONValue = [
                "id": .number(Double(id)), "method": "Page.handleJavaScriptDialog",
                "params": ["accept": true], "sessionId": .string(session)
            ]
            _ = write(Array(accept.serialized().utf8) + [0])
        }
        let line = Self.pageLogLine(method, message["params"] ?? [:])
        state.withLock { state in
            state.eventCounts[session + " " + method, default: 0] += 1
            if let line {
                state.pageLog[session, default: []].append(line)
                if state.pageLog[session]!.count > 40 { state.pageLog[session]!.removeFirst() }
            }
        }
    }

    /// A console call, an uncaught exception or a browser log entry as one line; nil for other events.
    static func pageLogLine(_ method: String, _ params: JSONValue) -> String? {
        switch method {
        case "Runtime.consoleAPICalled":
            let args = params["args"]?.arrayValue ?? []
            let text = args.map { $0["value"].map { $0.stringValue ?? $0.serialized() } ?? $0["description"]?.stringValue ?? "?" }
            return "console.\(params["type"]?.stringValue ?? "log"): " + text.joined(separator: " ")
        case "Runtime.exceptionThrown":
            let details = params["exceptionDetails"] ?? [:]
            let text = details["exception"]?["description"]?.stringValue ?? details["text"]?.stringValue ?? details.serialized()
            return "uncaught: \(text)"
        case "Log.entryAdded":
            let entry = params["entry"] ?? [:]
            return "\(entry["level"]?.stringValue ?? "log"): \(entry["text"]?.stringValue ?? "") \(entry["url"]?.stringValue ?? "")"
        default:
            return nil
        }
    }

    private func fail(_ id: Int, _ error: BrowserError) {
        state.withLock { $0.pending.removeValue(forKey: id) }?.continuation.resume(throwing: error)
    }

    private func failAll(_ reason: String) {
        let calls = state.withLock { state in
            if state.closed == nil { state.closed = reason }
            defer { state.pending = [:] }
            return Array(state.pending.values)
        }
        for call in calls { call.continuation.resume(throwing: BrowserError("\(call.method): \(reason)")) }
    }
}
