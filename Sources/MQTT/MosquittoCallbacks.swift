// libmosquitto callbacks.
//
// These run on libmosquitto's own loop thread. They are deliberately plain nonisolated global
// functions in a file of their own: a closure written in an actor-isolated context (e.g. @MainActor
// or top-level code) would carry that isolation, and Swift 6 traps ("Illegal instruction" in
// dispatch_assert_queue) when the library's thread calls it. The context (the client core) is
// recovered from `obj` with Unmanaged; everything the library owns (topic, payload, properties) is
// copied before returning, because the library frees it afterwards.

import CMosquitto
import CThreadName

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@inline(__always)
private func core(_ obj: UnsafeMutableRawPointer?) -> MQTTClientCore? {
    guard let obj else { return nil }
    return Unmanaged<MQTTClientCore>.fromOpaque(obj).takeUnretainedValue()
}

func mqttOnConnect(
    _ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ rc: Int32,
    _ flags: Int32, _ props: OpaquePointer?
) {
    guard let mosq, let core = core(obj) else { return }
    core.handleConnect(mosq: mosq, rc: rc, flags: flags)
}

func mqttOnDisconnect(
    _ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ rc: Int32,
    _ props: OpaquePointer?
) {
    guard let mosq, let core = core(obj) else { return }
    core.handleDisconnect(mosq: mosq, rc: rc)
}

func mqttOnSubscribe(
    _ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ mid: Int32,
    _ qosCount: Int32, _ grantedQoS: UnsafePointer<Int32>?, _ props: OpaquePointer?
) {
    guard let core = core(obj) else { return }
    core.handleSubscribed(mid: mid)
}

func mqttOnPublish(
    _ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ mid: Int32,
    _ reasonCode: Int32, _ props: OpaquePointer?
) {
    guard let core = core(obj) else { return }
    core.handlePublished(mid: mid, reasonCode: reasonCode)
}

func mqttOnMessage(
    _ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?,
    _ message: UnsafePointer<mosquitto_message>?, _ props: OpaquePointer?
) {
    // First thing: with QoS 1 the PUBACK is already queued when the library calls us.
    let receivedAt = ContinuousClock.now
    guard let core = core(obj), let message else { return }
    core.received.add(1, ordering: .relaxed)
    let m = message.pointee
    // Topic: libmosquitto has validated it as UTF-8; String(cString:) repairs anything odd anyway.
    let topic = m.topic.map { String(cString: $0) } ?? ""
    // Payload: raw bytes of any length, never interpreted here.
    var payload: [UInt8] = []
    if let bytes = m.payload, m.payloadlen > 0 {
        payload = Array(UnsafeRawBufferPointer(start: bytes, count: Int(m.payloadlen)))
    }
    var responseTopic: String?
    var correlationData: [UInt8]?
    var userProperties: [MQTTUserProperty] = []
    if let props {
        var value: UnsafeMutablePointer<CChar>?
        if mosquitto_property_read_string(props, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &value, false) != nil,
            let value
        {
            responseTopic = String(cString: value)
            free(value)
        }
        var data: UnsafeMutableRawPointer?
        var length: UInt16 = 0
        if mosquitto_property_read_binary(props, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &data, &length, false) != nil {
            if let data {
                correlationData = Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
                free(data)
            } else {
                correlationData = []
            }
        }
        userProperties = readUserProperties(props)
    }
    core.handleMessage(
        MQTTMessage(
            topic: topic, payload: payload, qos: Int(m.qos), retain: m.retain,
            responseTopic: responseTopic, correlationData: correlationData, userProperties: userProperties,
            receivedAt: receivedAt))
}

/// Every user property of a message, in order (`mosquitto_property_read_string_pair`, skipping
/// from the one found to the next).
func readUserProperties(_ props: OpaquePointer) -> [MQTTUserProperty] {
    var found: [MQTTUserProperty] = []
    var skipFirst = false
    var cursor: OpaquePointer? = props
    while let current = cursor {
        var name: UnsafeMutablePointer<CChar>?
        var value: UnsafeMutablePointer<CChar>?
        guard
            let next = mosquitto_property_read_string_pair(
                current, Int32(MQTT_PROP_USER_PROPERTY.rawValue), &name, &value, skipFirst)
        else { break }
        if let name, let value { found.append(MQTTUserProperty(String(cString: name), String(cString: value))) }
        free(name)
        free(value)
        cursor = next
        skipFirst = true
    }
    return found
}

func mqttOnLog(
    _ mosq: OpaquePointer?, _ obj: UnsafeMutableRawPointer?, _ level: Int32,
    _ text: UnsafePointer<CChar>?
) {
    guard let core = core(obj), let text else { return }
    // Only errors and warnings are kept: they explain failures that have no callback of their own
    // (e.g. a reconnect attempt that cannot reach the broker).
    if level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 {
        core.handleLog(String(cString: text))
    }
}

/// What the network thread needs; retained for the thread by start(), released here.
final class LoopThreadContext: @unchecked Sendable {  // immutable; mosq outlives the thread (joined before destroy)
    let mosq: OpaquePointer
    let core: MQTTClientCore
    let timeoutMilliseconds: Int32
    /// The network thread's name in `top -H` and profiles (``MQTTClient/threadName(clientId:)``).
    let threadName: String

    init(mosq: OpaquePointer, core: MQTTClientCore, timeoutMilliseconds: Int32, threadName: String) {
        self.mosq = mosq
        self.core = core
        self.timeoutMilliseconds = timeoutMilliseconds
        self.threadName = threadName
    }
}

/// Entry point of the network thread: mosquitto_loop_forever until it returns (fatal error, or a
/// disconnect we asked for), then tell the core. pthread_cancel may end it inside the loop instead.
func mqttLoopThreadMain(_ arg: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let arg else { return nil }
    let context = Unmanaged<LoopThreadContext>.fromOpaque(arg).takeRetainedValue()
    _ = hub_name_this_thread(context.threadName)
    let rc = mosquitto_loop_forever(context.mosq, context.timeoutMilliseconds, 1)
    context.core.handleLoopExit(rc: rc)
    return nil
}
