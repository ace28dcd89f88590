import DriverAPI

/// The broker connection shared with MQTT-native drivers and bridges, as the driver and bridge hosts
/// see it: a handle scoped to the filters a driver declared, and its release. The MQTT surface
/// provides it (`MQTTRelay`); without MQTT there is none and such drivers do not start.
public protocol DriverMessaging: Sendable {
    /// A handle limited to `scope` (MQTT filters); nil when there is no broker connection.
    ///
    /// - Parameter onMessage: called for each message delivered to the handle (a bridge's count of observations).
    func handle(scope: [String], onMessage: (@Sendable () -> Void)?) -> (any DriverMQTT)?
    /// Stops a handle: its stream ends and filters no one else uses are unsubscribed.
    func release(_ handle: any DriverMQTT)
}

extension DriverMessaging {
    /// A handle without a per-message callback.
    public func handle(scope: [String]) -> (any DriverMQTT)? { handle(scope: scope, onMessage: nil) }
}
