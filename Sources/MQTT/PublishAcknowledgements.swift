// Which published message an acknowledgement belongs to, for the publishes someone waits for
// (publishAndWait, publishTracked) or is told about (`whenAcknowledged`).
//
// libmosquitto numbers messages 1...65535 as they are published, also those that wait in its
// queue (it sends at most the broker's receive maximum at once): with more than 65,535 outstanding,
// two messages carry the same id. It pairs each acknowledgement with the *oldest* outstanding
// message of that id, and tells on_publish only the id. So this table keeps, per id, every QoS 1/2
// message published with it and not yet acknowledged, oldest first, including those nobody waits
// for (as places in the line): an acknowledgement is told to the message it belongs to, never to a
// newer one that took the same id. QoS 0 messages are not kept: on_publish tells them when they are
// written, and one dropped at a disconnect is never told.
//
// The message id is only known once mosquitto_publish returns, and the acknowledgement may arrive
// on the network thread right after that. So the publish itself happens under this lock, and the
// id is registered before the lock is let go: an acknowledgement can never come in before the
// entry it belongs to.
//
// Lock order: the client's handle lock, then this lock, then libmosquitto's own locks (inside
// mosquitto_publish). libmosquitto calls on_publish holding only its callback mutex, which a
// publishing thread never takes, so on_publish may take this lock. CoreState's lock is never
// taken while holding this one.

import Synchronization

final class PublishAcknowledgements: Sendable {
    /// Told the outcome on the network thread (see `MQTTClient.publish(_:_:qos:retain:whenAcknowledged:)`).
    typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    /// One outstanding QoS 1/2 message.
    struct Entry {
        /// 0 for a message nobody waits for; else tells a waiter's timer apart from a later waiter.
        var token: UInt64
        var continuation: CheckedContinuation<Void, any Error>? = nil
        /// Told instead of a waiter, registered with the publish.
        var completion: Completion? = nil
    }

    struct State {
        /// Per message id, the oldest outstanding message with it.
        var first: [Int32: Entry] = [:]
        /// Per message id, the newer outstanding messages with it, oldest first (only while more
        /// than 65,535 messages are outstanding).
        var later: [Int32: [Entry]] = [:]
        /// Acknowledged before their waiter parked: the reason code, by token.
        var early: [UInt64: Int32] = [:]
        var nextToken: UInt64 = 0
        /// Set once the client is dead: new waits fail at once.
        var closed: MQTTError?

        mutating func append(_ entry: Entry, mid: Int32) {
            if first[mid] == nil { first[mid] = entry } else { later[mid, default: []].append(entry) }
        }

        /// The oldest outstanding message with `mid`, taken out of the line.
        mutating func takeOldest(_ mid: Int32) -> Entry? {
            guard let oldest = first.removeValue(forKey: mid) else { return nil }
            if var newer = later[mid] {
                first[mid] = newer.removeFirst()
                later[mid] = newer.isEmpty ? nil : newer
            }
            return oldest
        }

        /// Changes the outstanding message `token` of `mid` in place (it keeps its place in the line).
        mutating func update<T>(mid: Int32, token: UInt64, _ change: (inout Entry) -> T) -> T? {
            if var entry = first[mid], entry.token == token {
                defer { first[mid] = entry }
                return change(&entry)
            }
            guard var newer = later[mid], let i = newer.firstIndex(where: { $0.token == token }) else { return nil }
            defer { later[mid] = newer }
            return change(&newer[i])
        }
    }

    private let state = Mutex(State())

    /// Runs `publish` (which returns the message id) and registers the id in one critical section:
    /// with a token when `tracked` (the `completion` to tell, or, without one, for a later ``wait``),
    /// else as a place in the line of its id. Call it for every QoS 1/2 publish.
    func publishRegistered(
        tracked: Bool, completion: Completion? = nil,
        _ publish: () throws -> Int32
    ) throws -> (mid: Int32, token: UInt64) {
        try state.withLock { s in
            if tracked, let closed = s.closed { throw closed }
            let mid = try publish()
            var token: UInt64 = 0
            if tracked {
                s.nextToken &+= 1
                token = s.nextToken
            }
            if s.closed == nil { s.append(Entry(token: token, completion: completion), mid: mid) }
            return (mid, token)
        }
    }

    /// on_publish (network thread): the oldest outstanding message with `mid` was acknowledged (or,
    /// QoS 0, written: then nothing is outstanding with it). `failure` turns a reason code into an
    /// error, if it is one.
    func acknowledged(mid: Int32, reasonCode: Int32, failure: (Int32) -> MQTTError?) {
        let taken: (waiter: CheckedContinuation<Void, any Error>?, completion: Completion?) = state.withLock { s in
            guard let entry = s.takeOldest(mid), entry.token != 0 else { return (nil, nil) }
            if entry.continuation == nil && entry.completion == nil { s.early[entry.token] = reasonCode }
            return (entry.continuation, entry.completion)
        }
        guard taken.waiter != nil || taken.completion != nil else { return }
        let result: Result<Void, any Error> = failure(reasonCode).map { .failure($0) } ?? .success(())
        taken.waiter?.resume(with: result)
        taken.completion?(result)
    }

    /// Completes when `mid` was acknowledged; throws on failure, when the client dies, on timeout
    /// and on cancellation.
    func wait(
        mid: Int32, token: UInt64, timeout: Duration?, timeoutError: @escaping @Sendable () -> MQTTError,
        failure: @escaping (Int32) -> MQTTError?
    ) async throws {
        let timer: Task<Void, any Error>? = timeout.map { timeout in
            Task { [weak self] in
                try await Task.sleep(for: timeout)
                self?.abandon(mid: mid, token: token, with: timeoutError())
            }
        }
        defer { timer?.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let immediate: Result<Void, any Error>? = state.withLock { s in
                    if let code = s.early.removeValue(forKey: token) {
                        return failure(code).map { .failure($0) } ?? .success(())
                    }
                    let cancelled = Task.isCancelled
                    let parked: Void? = s.update(mid: mid, token: token) { entry in
                        // Cancelled: the message keeps its place in the line, as one nobody waits for.
                        if cancelled { entry = Entry(token: 0) } else { entry.continuation = continuation }
                    }
                    // Timed out or cancelled before we got here, or the client died.
                    if parked == nil { return .failure(s.closed ?? CancellationError()) }
                    return cancelled ? .failure(CancellationError()) : nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            abandon(mid: mid, token: token, with: CancellationError())
        }
    }

    /// Forgets one wait (timeout, cancellation): its message keeps its place in the line of its id,
    /// as one nobody waits for.
    func abandon(mid: Int32, token: UInt64, with error: any Error) {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { s in
            s.early[token] = nil
            return s.update(mid: mid, token: token) { entry in
                defer { entry = Entry(token: 0) }
                return entry.continuation
            } ?? nil
        }
        waiter?.resume(throwing: error)
    }

    /// The client died or stopped: every wait fails with `error`, and so does every later one.
    func close(with error: MQTTError) {
        let entries: [Entry] = state.withLock { s in
            if s.closed == nil { s.closed = error }
            defer {
                s.first = [:]
                s.later = [:]
                s.early = [:]
            }
            return Array(s.first.values) + s.later.values.joined()
        }
        for entry in entries {
            entry.continuation?.resume(throwing: error)
            entry.completion?(.failure(error))
        }
    }
}
