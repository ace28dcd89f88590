import Foundation
import MQTT
import Synchronization

/// What the household bench's watcher has seen on the broker: the hub's status, devices online, the
/// last `switch` of each device, answers, the events on the event feed (their count and JSON
/// bytes), and the device traffic a bare subscriber got (the peer count for dropped readings).
final class HouseholdSeen: Sendable {
    private struct State {
        var hubOnline = false
        var online = Set<String>()
        var switches: [String: String] = [:]
        var answers: [String: Int] = [:]
        var events = 0, eventBytes = 0
        var deviceMessages = 0
        var homeAssistantOnline = false
    }
    private let state = Mutex(State())

    /// The filters to subscribe to: everything, sorted out here (overlapping filters could deliver
    /// a message twice).
    static let filters = ["#"]

    func record(_ m: MQTTMessage) {
        let topic = m.topic
        state.withLock { s in
            if topic.hasPrefix("hub/events/") {
                s.events += 1
                s.eventBytes += m.payload.count
                return
            }
            let parts = topic.split(separator: "/")
            let text = String(decoding: m.payload, as: UTF8.self)
            if topic == "hub/status" {
                s.hubOnline = text == "online"
            } else if topic == "homeassistant/status" {
                s.homeAssistantOnline = text == "online"
            } else if parts.count == 4, parts[0] == "hub", parts[1] == "device", parts[3] == "availability" {
                if text == "online" { s.online.insert(String(parts[2])) } else { s.online.remove(String(parts[2])) }
            } else if parts.count == 4, parts[0] == "hub", parts[1] == "device", parts[3] == "switch" {
                s.switches[String(parts[2])] = text
            } else if parts.first == "hub", parts.count > 1, parts[1] == "response" {
                let kind = parts.dropFirst(2).filter { $0 != "device" }.last.map(String.init) ?? ""
                s.answers[kind, default: 0] += text.contains(#""status":"ok""#) ? 1 : 0
            } else if !topic.hasPrefix("hub/"), !topic.hasPrefix("homeassistant/"), !topic.hasPrefix("cmnd/"), !topic.hasSuffix("/rpc") {
                // What devices and bridge nodes publish (not the hub's commands to them).
                s.deviceMessages += 1
            }
        }
    }

    var hubOnline: Bool { state.withLock { $0.hubOnline } }
    var homeAssistantOnline: Bool { state.withLock { $0.homeAssistantOnline } }
    var online: Int { state.withLock { $0.online.count } }
    func isOnline(_ id: String) -> Bool { state.withLock { $0.online.contains(id) } }
    func switchState(_ id: String) -> String? { state.withLock { $0.switches[id] } }
    /// Answers with status ok on `hub/response/.../<kind>` (`admit`, `set` for activations/set).
    func okAnswers(_ kind: String) -> Int { state.withLock { $0.answers[kind] ?? 0 } }
    var events: (count: Int, bytes: Int) { state.withLock { ($0.events, $0.eventBytes) } }
    var deviceMessages: Int { state.withLock { $0.deviceMessages } }
}
