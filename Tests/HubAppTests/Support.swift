import BrokerHarness
import Foundation
import HubDomain
import Logging

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

extension Logger {
    /// For tests that read nothing of the hub's diagnostics.
    static let discarding = Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
}

func temporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.path + "/hub-runtime-tests-" + UUID().uuidString.prefix(8)
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

let t0: Int64 = 1_795_000_000_000_000  // 2026-11-18T...

/// A varied history: devices, switches, readings across a reset, activations, animals, rejections.
func populate(_ hub: Hub) async throws {
    let commands: [HubCommand] = [
        .registerDevice(id: "lamp", driver: "virtual", name: "Lamp", config: "{}", hardwareId: "aa:bb"),
        .registerDevice(id: "pump", driver: "powerplug", name: "Pump", config: #"{"host":"10.0.0.9","port":230}"#, hardwareId: nil),
        .switchDevice(id: "lamp", target: .on),
        .reportSwitch(id: "lamp", state: .on, manual: false),
        // Measured before they are recorded (a reading from beyond the hub's clock is refused).
        .recordReading(subject: .device("lamp"), quantity: .energy, value: 1000, measuredAt: t0 - 7_200_000_000),
        .recordReading(subject: .device("lamp"), quantity: .energy, value: 1600, measuredAt: t0 - 3_600_000_000),
        .recordReading(subject: .device("lamp"), quantity: .energy, value: 100, measuredAt: t0),
        .recordReading(subject: .device("lamp"), quantity: .power, value: 60.5, measuredAt: t0),
        .setActivation(device: "pump", op: .add, name: "lawn", start: 1_795_010_000, lengthMinutes: 30, periodMinutes: 1440),
        .setActivation(device: "pump", op: .add, name: "", start: 1_795_010_000, lengthMinutes: 0, periodMinutes: 0),
        .admitAnimal(
            Admission(
                animal: "rex", name: "Rex", gender: "male", birthDate: "2020-02-29", weightKg: 31.2, species: "dog",
                breed: "boxer", coat: "fawn", ownerName: "Ana Souza", ownerAddress: "Rua A, 1", ownerPhone: "+55 11 5555",
                motive: "surgery", veterinarian: "Dr. Lima", observations: "bites", photo: "rex.jpg",
                beacon: "1de4b189115e45f6b44e509352269977")),
        .sightAnimal(id: "rex", room: "ward-2", beacon: "1de4b189115e45f6b44e509352269977", at: t0 + 60_000_000),
        .recordReading(subject: .animal("rex"), quantity: .heartRate, value: 88, measuredAt: t0 + 61_000_000),
        .switchDevice(id: "ghost", target: .toggle),
        .dischargeAnimal(id: "rex", exitWeightKg: 30.8, veterinarian: "Dr. Lima", observations: "healed"),
        .renameDevice(id: "pump", name: "Garden pump"),
        .removeDevice(id: "lamp")
    ]
    for (i, command) in commands.enumerated() {
        _ = try await hub.execute(
            command, commandId: "cmd-\(i)", actor: i % 2 == 0 ? "mqtt:ha" : "driver:virtual", now: t0 + Int64(i) * 1_000_000)
    }
}

/// The `hub` executable built next to the test bundle.
func hubExecutable() -> String? { builtExecutable("hub") }
