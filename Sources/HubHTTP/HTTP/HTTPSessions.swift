import Foundation
import HubEngine
import Synchronization

/// Browser sessions opened at `/login`, kept in memory only (a restart logs everyone out): a
/// random id (the `hub_session` cookie) mapped to the token's name, the token's digest at login
/// (rotating the token ends the session) and the session's CSRF token (the `hub_csrf` cookie).
final class HTTPSessions: Sendable {
    struct Session: Sendable, Equatable {
        var name: String
        var tokenDigest: String
        var csrf: String
        /// Seconds since the epoch after which the session is refused.
        var expires: Double
    }

    /// How long a session lasts from login (12 hours): the cookies' `Max-Age` too.
    static let lifetime = 12 * 3600
    /// At most this many sessions; the oldest give way.
    static let limit = 1000

    private let sessions = Mutex<[String: Session]>([:])

    /// Opens a session for the token called `name`.
    ///
    /// - Returns: the session id and its CSRF token.
    func open(name: String, tokenDigest: String, now: Double = Date().timeIntervalSince1970) -> (id: String, csrf: String) {
        let id = AccessTokens.randomText(bytes: 32), csrf = AccessTokens.randomText(bytes: 24)
        sessions.withLock { sessions in
            sessions = sessions.filter { $0.value.expires > now }
            while sessions.count >= Self.limit, let oldest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
                sessions[oldest.key] = nil
            }
            sessions[id] = Session(name: name, tokenDigest: tokenDigest, csrf: csrf, expires: now + Double(Self.lifetime))
        }
        return (id, csrf)
    }

    /// The live session with this id, nil when unknown or expired.
    func session(_ id: String, now: Double = Date().timeIntervalSince1970) -> Session? {
        sessions.withLock { sessions in
            guard let session = sessions[id] else { return nil }
            guard session.expires > now else {
                sessions[id] = nil
                return nil
            }
            return session
        }
    }

    func close(_ id: String) {
        sessions.withLock { _ = $0.removeValue(forKey: id) }
    }
}
