// Waiting for the broker to acknowledge a QoS 1/2 publish (publishAndWait).
//
// The message id is only known once mosquitto_publish returns, and the acknowledgement may arrive
// on the network thread right after that. So the publish itself happens under this lock, and the
// id is registered before the lock is let go: an acknowledgement can never come in before the
// entry that waits for it, and acknowledgements nobody waits for are not kept at all.
//
// Lock order: the client's handle lock, then this lock, then libmosquitto's own locks (inside
// mosquitto_publish). libmosquitto calls on_publish holding only its callback mutex, which a
// publishing thread never takes, so on_publish may take this lock. CoreState's lock is never
// taken while holding this one.

import Synchronization

final class PublishAcknowledgements: Sendable {
    /// Told the outcome on the network thread (see `MQTTClient.publish(_:_:qos:retain:whenAcknowledged:)`).
    typealias Completion = @Sendable (Result<Void, any Error>) -> Void

    struct Entry {
        /// Tells a waiter's timer apart from a later waiter on a reused message id.
        var token: UInt64
        var continuation: CheckedContinuation<Void, any Error>?
        /// Arrived before the waiter parked its continuation.
        var reasonCode: Int32?
        /// Told instead of a waiter, registered with the publish.
        var completion: Completion?
    }

    struct State {
        var entries: [Int32: Entry] = [:]
        var nextToken: UInt64 = 0
        /// Set once the client is dead: new waits fail at once.
        var closed: MQTTError?
    }

    private let state = Mutex(State())

    /// Runs `publish` (which returns the message id) and registers the id in one critical section,
    /// with the `completion` to tell (or, without one, for a later ``wait``).
    ///
    /// libmosquitto numbers messages 1...65535 as they are published, also those that wait in its
    /// queue: with more than that outstanding, a new message can take the id of one not yet
    /// acknowledged. That older message is then told it failed (`reused`), so its sender sends it
    /// again, rather than waiting for an acknowledgement this table can no longer tell apart.
    func publishRegistered(completion: Completion? = nil, reused: (Int32) -> MQTTError,
                           _ publish: () throws -> Int32) throws -> (mid: Int32, token: UInt64) {
        let (mid, token, displaced) = try state.withLock { s in
            if let closed = s.closed { throw closed }
            let mid = try publish()
            s.nextToken &+= 1
            let displaced = s.entries.updateValue(Entry(token: s.nextToken, completion: completion), forKey: mid)
            return (mid, s.nextToken, displaced)
        }
        if let displaced {
            let error = reused(mid)
            displaced.continuation?.resume(throwing: error)
            displaced.completion?(.failure(error))
        }
        return (mid, token)
    }

    /// on_publish (network thread). `failure` turns a reason code into an error, if it is one.
    func acknowledged(mid: Int32, reasonCode: Int32, failure: (Int32) -> MQTTError?) {
        let taken: (waiter: CheckedContinuation<Void, any Error>?, completion: Completion?) = state.withLock { s in
            guard var entry = s.entries[mid] else { return (nil, nil) }
            guard entry.continuation != nil || entry.completion != nil else {
                entry.reasonCode = reasonCode
                s.entries[mid] = entry
                return (nil, nil)
            }
            s.entries[mid] = nil
            return (entry.continuation, entry.completion)
        }
        guard taken.waiter != nil || taken.completion != nil else { return }
        let result: Result<Void, any Error> = failure(reasonCode).map { .failure($0) } ?? .success(())
        taken.waiter?.resume(with: result)
        taken.completion?(result)
    }

    /// Completes when `mid` was acknowledged; throws on failure, when the client dies, on timeout
    /// and on cancellation.
    func wait(mid: Int32, token: UInt64, timeout: Duration?, timeoutError: @escaping @Sendable () -> MQTTError,
              failure: @escaping (Int32) -> MQTTError?) async throws {
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
                    guard var entry = s.entries[mid], entry.token == token else {
                        // Timed out or cancelled before we got here, or the client died.
                        return .failure(s.closed ?? CancellationError())
                    }
                    if let code = entry.reasonCode {
                        s.entries[mid] = nil
                        return failure(code).map { .failure($0) } ?? .success(())
                    }
                    if Task.isCancelled {
                        s.entries[mid] = nil
                        return .failure(CancellationError())
                    }
                    entry.continuation = continuation
                    s.entries[mid] = entry
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            abandon(mid: mid, token: token, with: CancellationError())
        }
    }

    /// Forgets one wait (timeout, cancellation, or a publish that failed after all).
    func abandon(mid: Int32, token: UInt64, with error: any Error) {
        let waiter: CheckedContinuation<Void, any Error>? = state.withLock { s in
            guard let entry = s.entries[mid], entry.token == token else { return nil }
            s.entries[mid] = nil
            return entry.continuation
        }
        waiter?.resume(throwing: error)
    }

    /// The client died or stopped: every wait fails with `error`, and so does every later one.
    func close(with error: MQTTError) {
        let entries: [Entry] = state.withLock { s in
            if s.closed == nil { s.closed = error }
            defer { s.entries = [:] }
            return Array(s.entries.values)
        }
        for entry in entries {
            entry.continuation?.resume(throwing: error)
            entry.completion?(.failure(error))
        }
    }
}
