import HubEngine
import HubMetrics
import Hummingbird
import HummingbirdCore
import Logging
import ServiceLifecycle
import Synchronization

/// The hub's HTTP listener, one more `Service` in the hub's group: hummingbird's `Application`
/// (its own server and date cache run in a group of their own, which shuts down with the hub's).
package final class HTTPService: Service, Sendable {
    package let settings: HTTPSettings
    private let app: Application<RouterResponder<HubRequestContext>>
    /// The bound port once the server runs; `stopped` once `run()` returned.
    private let bound: BoundPort

    /// - Parameters:
    ///   - settings: where to listen, the deadlines (``ConnectionDeadlines``) and the connection limit.
    ///   - router: what to serve (``HubRoutes``).
    ///   - metrics: where a cut connection is counted.
    ///   - logger: the hub's logger; hummingbird's own lines are kept to warnings unless it is at `trace`.
    ///   - serving: what the listener serves, for its start-up line.
    package init(
        settings: HTTPSettings, router: Router<HubRequestContext>, metrics: HubMetrics, logger: Logger,
        serving: String = "the console, the API, /metrics, /healthz and /readyz"
    ) {
        self.settings = settings
        var quieter = logger
        if logger.logLevel > .trace { quieter.logLevel = max(logger.logLevel, .warning) }
        let bound = BoundPort()
        self.bound = bound
        let cut: @Sendable (String) -> Void = { reason in metrics.httpConnectionCut(reason: reason) }
        // Hummingbird's decoder limits stay (80 KiB of headers); its idle timeout is left off,
        // ConnectionDeadlines keeps both waits and counts what it cuts.
        let channel = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionDeadlines(idle: settings.idleTimeout, body: settings.bodyTimeout, cut: cut)])
        // Past the limit the listener stops accepting (new connections wait in the backlog) until one closes.
        let limit = MaximumAvailableConnections(settings.maxConnections, logger: quieter)
        app = Application(
            router: router, server: .http1(configuration: channel),
            configuration: ApplicationConfiguration(
                address: .hostname(settings.host, port: settings.port), serverName: nil,
                availableConnectionsDelegate: limit),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? settings.port
                bound.state.withLock { $0.port = port }
                let address = HTTPSettings(host: settings.host, port: port)
                let access = address.isLoopback ? "this machine only, no credential" : "a token or /login required"
                logger.info("http: serving \(serving) on http://\(address.description)/ (\(access))")
            },
            logger: quieter)
    }

    package func run() async throws {
        defer { bound.state.withLock { $0.stopped = true } }
        do {
            try await app.run()
        } catch {
            throw HubError.failed("http: cannot serve on \(settings.description): \(error)")
        }
    }

    /// The port the listener is bound to, once it is (nil if it stopped first).
    package func port() async -> Int? {
        while true {
            let (port, stopped) = bound.state.withLock { $0 }
            if port != nil || stopped { return port }
            do { try await Task.sleep(for: .milliseconds(10)) } catch { return nil }
        }
    }
}

/// Where ``HTTPService`` keeps the port its server bound.
final class BoundPort: Sendable {
    let state = Mutex<(port: Int?, stopped: Bool)>((nil, false))
}
