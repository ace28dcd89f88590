import BrokerHarness
import Foundation
import MQTT
import Testing

/// The network thread shows in `top -H` and profiles as `mqtt:<client id>` (15 bytes at most).
@Suite struct ThreadNameTests {
    @Test func theNameFitsWhatLinuxKeeps() {
        #expect(MQTTClient.threadName(clientId: "hub") == "mqtt:hub")
        #expect(MQTTClient.threadName(clientId: "") == "mqtt:")
        #expect(MQTTClient.threadName(clientId: "hub-a-instance-two") == "mqtt:hub-a-inst")
        // Whole characters only: this "é" would take bytes 15 and 16.
        #expect(MQTTClient.threadName(clientId: "hub-a-insé") == "mqtt:hub-a-ins")
    }

    @Test func theNetworkThreadIsNamed() async throws {
        let broker = try await TestBroker.startAsync()
        let h = try await makeClient(broker, id: "named-thread")
        #expect(threadNames().contains("mqtt:named-thre"), "threads: \(threadNames())")
        await h.client.stop()
    }
}

/// The system names of this process's threads (`/proc/self/task/*/comm`).
func threadNames() -> [String] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
        .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
}
