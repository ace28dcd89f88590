import DriverAPI
import Foundation
import Testing

@testable import Tasmota

/// The firmware options that change how a device answers a switch command, each confirming one.
/// What the firmware writes is `MqttPublishPowerState` in arendst/Tasmota
/// `tasmota/tasmota_xdrv_driver/xdrv_02_9_mqtt.ino` (commit a9acc4c4af4dff1d0a78fc2dd0288455bb1c953b):
/// `{"POWER":"ON"}` on `stat/<t>/RESULT` (or, with `SetOption4 1`, on `stat/<t>/POWER`), then
/// unless `SetOption90 1` the plain word on `stat/<t>/POWER`; `SetOption26 1` names the only
/// relay `POWER1`.
@Suite("Tasmota response options SetOption4, SetOption26 and SetOption90 confirm a switch")
struct TasmotaResponseOptionTests {
    func confirmed(_ rig: Rig, _ states: [Bool]) async -> Bool {
        guard await eventually({ rig.switchStates == states }) else { return false }
        try? await Task.sleep(for: .milliseconds(200))
        return rig.switchStates == states
            && !rig.observations.contains { if case .commandFailed = $0 { return true } else { return false } }
    }

    /// `SetOption4 1`: the JSON answer on `stat/<t>/POWER` instead of `RESULT`, then the plain word
    /// there too. The payloads of arendst/Tasmota#3122 (Jason2866's console,
    /// `stat/sonoff-065CA6/RESULT = {"POWER":"ON"}`, `stat/sonoff-065CA6/POWER = ON`) on the topic
    /// `SetOption4 1` gives the JSON (`GetTopic_P(stopic, STAT, ..., mqtt_response ? scommand : RESULT)`).
    @Test func setOption4AnswersOnThePowerTopic() async throws {
        let rig = try await Rig.make(settings: #"{"topic":"sonoff-065CA6"}"#)
        #expect(try await rig.online())
        try await rig.driver.execute(.setSwitch(on: true))
        try await rig.publish("stat/sonoff-065CA6/POWER", #"{"POWER":"ON"}"#)
        try await rig.publish("stat/sonoff-065CA6/POWER", "ON")
        #expect(await confirmed(rig, [true]))
        try await rig.driver.execute(.setSwitch(on: false))
        try await rig.publish("stat/sonoff-065CA6/POWER", #"{"POWER":"OFF"}"#)
        try await rig.publish("stat/sonoff-065CA6/POWER", "OFF")
        #expect(await confirmed(rig, [true, false]))
        #expect(rig.driver.ignoredPayloads == 0)
        await rig.shutdown()
    }

    /// `SetOption26 1`: the only relay answers as `POWER1`. arendst/Tasmota#3122
    /// (landrews33, 2018-07-03), FullTopic `/%topic%/%prefix%/` (a leading `/`):
    /// `/shedlight/stat/RESULT = {"POWER1":"ON"}`, `/shedlight/stat/POWER1 = ON (retained)`.
    /// Before, the leading `/` of the FullTopic was refused.
    @Test func setOption26NamesTheOnlyRelayPower1() async throws {
        let rig = try await Rig.make(settings: #"{"topic":"shedlight","full_topic":"/%topic%/%prefix%/"}"#)
        #expect(try await rig.online())
        #expect(rig.driver.topics.commandTopic == "/shedlight/cmnd/POWER")
        try await rig.driver.execute(.setSwitch(on: true))
        try await rig.publish("/shedlight/stat/RESULT", #"{"POWER1":"ON"}"#)
        try await rig.publish("/shedlight/stat/POWER1", "ON", retain: true)
        #expect(await confirmed(rig, [true]))
        #expect(rig.driver.ignoredPayloads == 0)
        await rig.shutdown()
    }

    /// `SetOption90 1`: no plain word, the JSON answer on `RESULT` alone. Jason2866's
    /// `stat/sonoff-065CA6/RESULT` lines of arendst/Tasmota#3122 without the `POWER` lines
    /// the option suppresses; each command is confirmed by its one answer.
    @Test func setOption90AnswersInJSONOnly() async throws {
        let rig = try await Rig.make(settings: #"{"topic":"sonoff-065CA6"}"#)
        #expect(try await rig.online())
        for (i, on) in [true, false, true, false].enumerated() {
            try await rig.driver.execute(.setSwitch(on: on))
            try await rig.publish("stat/sonoff-065CA6/RESULT", on ? #"{"POWER":"ON"}"# : #"{"POWER":"OFF"}"#)
            #expect(await confirmed(rig, Array([true, false, true, false].prefix(i + 1))))
        }
        await rig.shutdown()
    }
}
