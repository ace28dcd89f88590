import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubMQTT

/// MQTT command payloads, state payloads and Home Assistant discovery (all pure).
private enum P {
    static let now: Int64 = 1_795_000_000_000_000  // 2026-11-18T...

    static func parse(_ route: RequestRoute, _ text: String) throws(RequestError) -> RequestParser.ParsedCommand {
        try RequestParser.parse(route: route, message: Array(text.utf8), now: now)
    }

    /// The error message for `bytes` on `route`, or nil when it parsed.
    static func error(_ route: RequestRoute, _ bytes: [UInt8]) -> String? {
        do { _ = try RequestParser.parse(route: route, message: bytes, now: now); return nil } catch { return error.message }
    }

    static func error(_ route: RequestRoute, _ text: String) -> String? { error(route, Array(text.utf8)) }

    static func fullError(_ route: RequestRoute, _ text: String) -> RequestError? {
        do { _ = try parse(route, text); return nil } catch { return error }
    }

    /// Read models built by folding events, as the hub does.
    struct World {
        var state = HubState()
        var seq: UInt64 = 0
        mutating func apply(_ event: HubEvent, at: Int64, commandId: String? = nil) {
            seq += 1
            state.apply(event, context: EventContext(sequence: seq, timestamp: at, actor: "test", commandId: commandId))
        }
    }

    static let t0: Int64 = 1_795_000_000_000_000  // 2026-11-18T11:06:40Z
    static let hour: Int64 = 3_600_000_000

    static func world() -> World {
        var w = World()
        w.apply(
            .deviceRegistered(DeviceRegistered(device: "lamp", driver: "powerplug", name: "Lamp", config: "{}", hardwareId: "AA:BB:CC")),
            at: t0)
        w.apply(.switchToggled(SwitchToggled(device: "lamp", state: .on, cause: .manual)), at: t0 + 1)
        w.apply(.modeChanged(ModeChanged(device: "lamp", mode: .manual)), at: t0 + 2)
        w.apply(.switchRequested(SwitchRequested(device: "lamp", state: .off)), at: t0 + 3_000_000, commandId: "c-9")
        w.apply(.switchFailed(SwitchFailed(device: "lamp", state: .on, reason: "no answer within 5 s")), at: t0 + 1_000_000)
        w.apply(.switchRequested(SwitchRequested(device: "lamp", state: .off)), at: t0 + 3_000_000, commandId: "c-9")
        w.apply(.availabilityChanged(AvailabilityChanged(device: "lamp", available: true, reason: "")), at: t0 + 4_000_000)
        w.apply(.readingRecorded(ReadingRecorded(subject: .device("lamp"), quantity: .power, value: 60.4567, measuredAt: t0)), at: t0)
        w.apply(.readingRecorded(ReadingRecorded(subject: .device("lamp"), quantity: .voltage, value: 229.96, measuredAt: t0)), at: t0)
        w.apply(.readingRecorded(ReadingRecorded(subject: .device("lamp"), quantity: .current, value: 0.26291, measuredAt: t0)), at: t0)
        w.apply(.readingRecorded(ReadingRecorded(subject: .device("lamp"), quantity: .energy, value: 1000, measuredAt: t0)), at: t0)
        w.apply(
            .readingRecorded(ReadingRecorded(subject: .device("lamp"), quantity: .energy, value: 1234.5678, measuredAt: t0 + hour)),
            at: t0 + hour)
        w.apply(
            .activationChanged(
                ActivationChanged(
                    device: "lamp", change: .added, name: "evening", start: 1_795_456_800,
                    lengthMinutes: 30, periodMinutes: 1440)), at: t0)
        w.apply(.deviceRegistered(DeviceRegistered(device: "fresh", driver: "virtual", name: "Fresh")), at: t0)
        w.apply(.deviceRegistered(DeviceRegistered(device: "gone", driver: "virtual", name: "Gone")), at: t0)
        w.apply(.deviceRemoved(DeviceRemoved(device: "gone")), at: t0 + 5)
        w.apply(
            .animalAdmitted(
                Admission(
                    animal: "rex", name: "Rex", weightKg: 23.5, species: "dog", ownerName: "Ana Lima",
                    ownerAddress: "Rua A, 1", ownerPhone: "+55 11 5555-0100",
                    beacon: "1de4b189115e45f6b44e5093522699a1")), at: t0)
        w.apply(
            .animalSighted(AnimalSighted(animal: "rex", room: "ward-2", beacon: "1de4b189115e45f6b44e5093522699a1", at: t0 + 60_000_000)),
            at: t0 + 60_000_000)
        w.apply(.readingRecorded(ReadingRecorded(subject: .animal("rex"), quantity: .heartRate, value: 88, measuredAt: t0)), at: t0)
        w.apply(.readingRecorded(ReadingRecorded(subject: .animal("rex"), quantity: .temperature, value: 38.6, measuredAt: t0)), at: t0)
        w.apply(.animalAdmitted(Admission(animal: "tom", name: "Tom", weightKg: 4, species: "cat", beacon: "beef")), at: t0)
        w.apply(.animalDischarged(AnimalDischarged(animal: "tom", exitWeightKg: 4.2)), at: t0 + hour)
        return w
    }
}

@Suite struct MQTTCommandPayloadTests {
    // MARK: Malformed input, every route

    static let routes: [RequestRoute] = [
        .switchSet("lamp"), .activationsSet("lamp"), .animalAdmit, .animalDischarge("rex"),
        .animalVitals("rex"), .request("device/add"), .request("device/get"), .request("command")
    ]

    @Test(arguments: routes) func emptyPayload(route: RequestRoute) {
        #expect(P.error(route, []) == "empty payload")
    }

    /// 1 MiB of pseudo-random bytes.
    static let garbage: [UInt8] = {
        var x: UInt64 = 0x9E37_79B9_7F4A_7C15
        return (0..<1_048_576).map { _ in
            x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: x >> 56)
        }
    }()

    @Test(arguments: routes) func megabyteOfGarbage(route: RequestRoute) {
        #expect(P.error(route, Self.garbage) == "payload of 1048576 bytes exceeds 65536")
        #expect(P.error(route, [UInt8](repeating: UInt8(ascii: "{"), count: 65_537)) == "payload of 65537 bytes exceeds 65536")
    }

    @Test(arguments: routes) func invalidUTF8(route: RequestRoute) {
        #expect(P.error(route, [0x4F, 0x4E, 0xFF]) == "payload is not valid UTF-8 (byte 2)")
        #expect(P.error(route, Array("{\"state\":\"".utf8) + [0xC3]) == "payload is not valid UTF-8 (byte 11)")
    }

    @Test func utf8Validator() {
        #expect(RequestParser.firstInvalidUTF8(Array("plain ascii, é, €, 𝄞".utf8)) == nil)
        #expect(RequestParser.firstInvalidUTF8([0xC0, 0x80]) == 0)  // overlong NUL
        #expect(RequestParser.firstInvalidUTF8([0xE0, 0x80, 0x80]) == 1)  // overlong
        #expect(RequestParser.firstInvalidUTF8([0xED, 0xA0, 0x80]) == 1)  // surrogate
        #expect(RequestParser.firstInvalidUTF8([0xF4, 0x90, 0x80, 0x80]) == 1)  // above U+10FFFF
        #expect(RequestParser.firstInvalidUTF8([0x41, 0xE2, 0x82]) == 3)  // truncated
        #expect(RequestParser.firstInvalidUTF8([0x41, 0x80]) == 1)  // stray continuation
        #expect(RequestParser.firstInvalidUTF8([0xF5, 0x80]) == 0)
    }

    @Test func jsonErrorsCarryTheParserMessage() {
        #expect(P.error(.activationsSet("lamp"), "{\"op\":\"add\"") == "invalid JSON at byte 11: expected ',' or '}'")
        #expect(P.error(.animalAdmit, "{'id':1}") == "invalid JSON at byte 1: expected a string key")
        #expect(P.error(.switchSet("lamp"), "{\"state\":\"ON\"") == "invalid JSON at byte 13: expected ',' or '}'")
        #expect(P.error(.request("device/add"), "nul") == "invalid JSON at byte 0: expected \"null\"")
        #expect(P.error(.animalVitals("rex"), "   ") == "invalid JSON at byte 3: expected a value")
    }

    @Test func wrongShapes() {
        #expect(P.error(.activationsSet("lamp"), "[1,2]") == "payload must be a JSON object, not an array")
        #expect(P.error(.animalAdmit, "\"rex\"") == "payload must be a JSON object, not a string")
        #expect(P.error(.animalVitals("rex"), "88") == "payload must be a JSON object, not a number")
        #expect(P.error(.request("devices"), "null") == "payload must be a JSON object, not null")
        #expect(P.error(.request("command"), "true") == "payload must be a JSON object, not a boolean")
    }

    @Test func notCommandTopics() {
        let e = P.fullError(.invalid("device id \"a+b\" contains the wildcard character '+'"), #"{"state":"ON","id":"c-1"}"#)
        #expect(e?.message == "device id \"a+b\" contains the wildcard character '+'")
        #expect(e?.echo.id == "c-1")
    }

    // MARK: switch/set

    @Test func switchPlain() throws {
        #expect(try P.parse(.switchSet("lamp"), "ON").commands == [.switchDevice(id: "lamp", target: .on)])
        #expect(try P.parse(.switchSet("lamp"), " off\r\n").commands == [.switchDevice(id: "lamp", target: .off)])
        #expect(try P.parse(.switchSet("lamp"), "Toggle").commands == [.switchDevice(id: "lamp", target: .toggle)])
        #expect(try P.parse(.switchSet("lamp"), "\"ON\"").commands == [.switchDevice(id: "lamp", target: .on)])
        let p = try P.parse(.switchSet("lamp"), "on")
        #expect(p.commandId == nil && p.echo == RequestParser.Echo() && p.query == nil && p.commandIds == [nil])
        #expect(p.command == .switchDevice(id: "lamp", target: .on))
    }

    /// One rule for the spaces around a word, whether it is the payload, a JSON string or a JSON
    /// field: ignored ("on " was taken as plain text and refused inside JSON).
    @Test func oneRuleForSpacesAroundAWord() throws {
        for payload in ["on ", "\"on \"", #"{"state":"on "}"#, #"{"state":" ON\t"}"#, #"{"state":"on\r\n"}"#] {
            #expect(try P.parse(.switchSet("lamp"), payload).commands == [.switchDevice(id: "lamp", target: .on)], "\(payload)")
        }
        #expect(try P.parse(.request("switch"), #"{"device":"lamp","state":"off "}"#).commands == [.switchDevice(id: "lamp", target: .off)])
        #expect(
            try P.parse(.request("command"), #"{"command":"switch","id":"lamp","state":" toggle"}"#).commands
                == [.switchDevice(id: "lamp", target: .toggle)])
        #expect(
            try P.parse(.request("scene/define"), #"{"id":"eve","states":{"lamp":"ON "}}"#).commands
                == [.defineScene(id: "eve", name: "", targets: [DeviceTarget(device: "lamp", state: .on)])])
        // Spaces inside a word are not around it.
        #expect(P.error(.switchSet("lamp"), #"{"state":"o n"}"#) != nil)
        #expect(P.error(.switchSet("lamp"), "o n") != nil)
    }

    @Test func switchJSON() throws {
        let p = try P.parse(.switchSet("lamp"), #"{"state":"off","id":"c-1"}"#)
        #expect(p.commands == [.switchDevice(id: "lamp", target: .off)])
        #expect(p.commandId == "c-1" && p.commandIds == ["c-1"])
        #expect(p.echo.id == "c-1")
        let q = try P.parse(.switchSet("lamp"), #"{"state":"TOGGLE","command_id":"k","transaction":42}"#)
        #expect(q.commandId == "k" && q.echo.transaction == 42 && q.echo.id == nil)
    }

    @Test func switchErrors() {
        let forms = "expected ON, OFF or TOGGLE (any case), or JSON {\"state\":\"ON\"|\"OFF\"|\"TOGGLE\",\"id\":\"<command id>\"}"
        #expect(P.error(.switchSet("lamp"), "DIM") == forms + ", not \"DIM\"")
        #expect(P.error(.switchSet("lamp"), "\"DIM\"") == forms + ", not \"\\\"DIM\\\"\"")
        #expect(P.error(.switchSet("lamp"), "[\"ON\"]") == forms + ", not \"[\\\"ON\\\"]\"")
        #expect(P.error(.switchSet("lamp"), "  ") == forms + ", not \"\"")
        #expect(P.error(.switchSet("lamp"), String(repeating: "x", count: 60_000))?.count ?? .max < 300)
        #expect(P.error(.switchSet("lamp"), #"{"state":"DIM"}"#) == "\"state\": must be ON, OFF or TOGGLE, not \"DIM\"")
        #expect(P.error(.switchSet("lamp"), #"{"state":1}"#) == "\"state\": must be a string")
        let e = P.fullError(.switchSet("lamp"), #"{"id":"c-2"}"#)
        #expect(e?.message == "\"state\": is required")
        #expect(e?.echo.id == "c-2")
        #expect(P.error(.switchSet("lamp"), #"{"state":"ON","id":5}"#) == "\"id\": must be a string")
    }

    // MARK: activations/set

    @Test func activations() throws {
        let start = ISO8601.parse("2026-11-23T18:00:00Z")! / 1_000_000
        let p = try P.parse(
            .activationsSet("lamp"),
            #"{"op":"add","name":"evening","start":"2026-11-23T18:00:00Z","length":30,"period":"1440","id":"a-1"}"#)
        #expect(
            p.commands == [.setActivation(device: "lamp", op: .add, name: "evening", start: start, lengthMinutes: 30, periodMinutes: 1440)])
        #expect(p.commandId == "a-1" && p.echo.id == "a-1")
        let u = try P.parse(.activationsSet("lamp"), #"{"op":"update","name":"evening","start":1795456800,"device":"lamp"}"#)
        #expect(
            u.commands == [
                .setActivation(device: "lamp", op: .update, name: "evening", start: 1_795_456_800, lengthMinutes: nil, periodMinutes: nil)
            ])
        let r = try P.parse(.activationsSet("lamp"), #"{"op":"remove","name":"evening"}"#)
        #expect(
            r.commands == [.setActivation(device: "lamp", op: .remove, name: "evening", start: nil, lengthMinutes: nil, periodMinutes: nil)]
        )
    }

    @Test func activationErrors() {
        #expect(P.error(.activationsSet("lamp"), #"{"op":"drop","name":"x"}"#) == "\"op\": must be add, update or remove, not \"drop\"")
        #expect(P.error(.activationsSet("lamp"), #"{"name":"x"}"#) == "\"op\": is required")
        #expect(P.error(.activationsSet("lamp"), #"{"op":"add"}"#) == "\"name\": is required")
        #expect(P.error(.activationsSet("lamp"), #"{"op":"add","name":"x","length":"abc"}"#) == "\"length\": must be a number, not \"abc\"")
        #expect(P.error(.activationsSet("lamp"), #"{"op":"add","name":"x","length":1.5}"#) == "\"length\": must be a whole number")
        #expect(
            P.error(.activationsSet("lamp"), #"{"op":"add","name":"x","start":"tomorrow"}"#)
                == "\"start\": is not an ISO-8601 time: \"tomorrow\"")
        #expect(
            P.error(.activationsSet("lamp"), #"{"op":"add","name":"x","start":true}"#)
                == "\"start\": must be an ISO-8601 string or Unix seconds")
        #expect(
            P.error(.activationsSet("lamp"), #"{"op":"add","name":"x","device":"pump"}"#)
                == "\"device\": \"pump\" does not match the device in the topic (\"lamp\")")
    }

    // MARK: animals

    @Test func admit() throws {
        let p = try P.parse(
            .animalAdmit,
            #"""
            {"id":"rex","name":"Rex","species":"dog","weight_kg":"23.5","beacon":"1DE4","gender":"male","birth_date":"2020-02-29",
             "breed":"boxer","coat":"fawn","owner_name":"Ana","owner_address":"Rua A","owner_phone":"+55","motive":"surgery",
             "veterinarian":"Dr. Lima","observations":"bites","photo":"rex.jpg","command_id":"adm-1","transaction":"t"}
            """#)
        #expect(
            p.commands == [
                .admitAnimal(
                    Admission(
                        animal: "rex", name: "Rex", gender: "male", birthDate: "2020-02-29", weightKg: 23.5,
                        species: "dog", breed: "boxer", coat: "fawn", ownerName: "Ana", ownerAddress: "Rua A",
                        ownerPhone: "+55", motive: "surgery", veterinarian: "Dr. Lima", observations: "bites",
                        photo: "rex.jpg", beacon: "1DE4"))
            ])
        #expect(p.commandId == "adm-1" && p.echo.transaction == "t")
        let minimal = try P.parse(.animalAdmit, #"{"id":"tom","name":"Tom","species":"cat","weight_kg":4,"beacon":"b"}"#)
        #expect(minimal.commands == [.admitAnimal(Admission(animal: "tom", name: "Tom", weightKg: 4, species: "cat", beacon: "b"))])
        #expect(minimal.commandId == nil)
    }

    @Test func admitErrors() {
        #expect(P.error(.animalAdmit, #"{"id":"rex","name":"Rex","species":"dog","beacon":"b"}"#) == "\"weight_kg\": is required")
        #expect(
            P.error(.animalAdmit, #"{"id":"rex","name":"Rex","species":"dog","beacon":"b","weight_kg":"heavy"}"#)
                == "\"weight_kg\": must be a number, not \"heavy\"")
        #expect(
            P.error(.animalAdmit, #"{"id":"rex","name":["Rex"],"species":"dog","beacon":"b","weight_kg":3}"#)
                == "\"name\": must be a string")
        #expect(P.error(.animalAdmit, #"{"name":"Rex"}"#) == "\"id\": is required")
        // A "command" key in the payload cannot turn the admission into something else.
        #expect(P.error(.animalAdmit, #"{"command":"remove_device","id":"rex"}"#)?.hasPrefix("\"command\": is not a known field") == true)
    }

    @Test func discharge() throws {
        let p = try P.parse(.animalDischarge("rex"), #"{"exit_weight_kg":24.1,"veterinarian":"Dr. Lima","command_id":"d-1"}"#)
        #expect(p.commands == [.dischargeAnimal(id: "rex", exitWeightKg: 24.1, veterinarian: "Dr. Lima", observations: nil)])
        #expect(p.commandId == "d-1")
        #expect(
            try P.parse(.animalDischarge("rex"), #"{"id":"rex","exit_weight_kg":"24"}"#).commands
                == [.dischargeAnimal(id: "rex", exitWeightKg: 24, veterinarian: nil, observations: nil)])
        #expect(P.error(.animalDischarge("rex"), #"{"veterinarian":"x"}"#) == "\"exit_weight_kg\": is required")
        #expect(
            P.error(.animalDischarge("rex"), #"{"id":"tom","exit_weight_kg":3}"#)
                == "\"id\": \"tom\" does not match the animal in the topic (\"rex\")")
        #expect(P.error(.animalDischarge("rex"), #"{"exit_weight_kg":3,"observations":7}"#) == "\"observations\": must be a string")
    }

    @Test func vitals() throws {
        let both = try P.parse(
            .animalVitals("rex"), #"{"heart_rate":"88","temperature":38.6,"measured_at":"2026-11-22T21:00:00Z","command_id":"v-1"}"#)
        let at = ISO8601.parse("2026-11-22T21:00:00Z")!
        #expect(
            both.commands == [
                .recordReading(subject: .animal("rex"), quantity: .heartRate, value: 88, measuredAt: at),
                .recordReading(subject: .animal("rex"), quantity: .temperature, value: 38.6, measuredAt: at)
            ])
        #expect(both.commandId == "v-1" && both.commandIds == ["v-1:heart_rate", "v-1:temperature"])
        #expect(both.command == nil)
        let one = try P.parse(.animalVitals("rex"), #"{"temperature":39,"heart_rate":null,"command_id":"v-2"}"#)
        #expect(one.commands == [.recordReading(subject: .animal("rex"), quantity: .temperature, value: 39, measuredAt: P.now)])
        #expect(one.commandIds == ["v-2"])
        let seconds = try P.parse(.animalVitals("rex"), #"{"heart_rate":90,"measured_at":1795000000.5}"#)
        #expect(
            seconds.commands == [
                .recordReading(subject: .animal("rex"), quantity: .heartRate, value: 90, measuredAt: 1_795_000_000_500_000)
            ])
        #expect(seconds.commandIds == [nil])
        #expect(P.error(.animalVitals("rex"), "{}") == "give \"heart_rate\" (bpm) and/or \"temperature\" (°C)")
        #expect(P.error(.animalVitals("rex"), #"{"heart_rate":"fast"}"#) == "\"heart_rate\": must be a number, not \"fast\"")
        #expect(P.error(.animalVitals("rex"), #"{"temperature":[38]}"#) == "\"temperature\": must be a number")
        #expect(
            P.error(.animalVitals("rex"), #"{"temperature":38,"measured_at":"noon"}"#)
                == "\"measured_at\": is not an ISO-8601 time: \"noon\"")
    }

    // MARK: request/<name>

    @Test func deviceRequests() throws {
        let add = try P.parse(
            .request("device/add"),
            #"{"id":"plug1","driver":"powerplug","name":"Pump","config":{"host":"10.0.0.5","port":230},"hardware_id":"AA:BB","command_id":"r-1"}"#
        )
        #expect(
            add.commands == [
                .registerDevice(
                    id: "plug1", driver: "powerplug", name: "Pump", config: #"{"host":"10.0.0.5","port":230}"#,
                    hardwareId: "AA:BB")
            ])
        #expect(add.commandId == "r-1" && add.echo.id == "plug1")
        #expect(
            try P.parse(.request("device/add"), #"{"id":"v","driver":"virtual","name":"V"}"#).commands
                == [.registerDevice(id: "v", driver: "virtual", name: "V", config: "{}", hardwareId: nil)])
        #expect(
            P.error(.request("device/add"), #"{"id":"v","driver":"virtual","name":"V","config":"{}"}"#)
                == "\"config\": must be a JSON object")
        #expect(P.error(.request("device/add"), #"{"id":"v","name":"V"}"#) == "\"driver\": is required")
        #expect(
            try P.parse(.request("device/rename"), #"{"id":"lamp","name":"Reading lamp"}"#).commands
                == [.renameDevice(id: "lamp", name: "Reading lamp")])
        #expect(P.error(.request("device/rename"), #"{"id":"lamp"}"#) == "\"name\": is required")
        #expect(try P.parse(.request("device/remove"), #"{"id":"lamp","command_id":"rm"}"#).commands == [.removeDevice(id: "lamp")])
        #expect(P.error(.request("device/remove"), #"{"id":7}"#) == "\"id\": must be a string")
    }

    @Test func switchRequest() throws {
        let p = try P.parse(.request("switch"), #"{"device":"lamp","state":"toggle","id":"x-1"}"#)
        #expect(p.commands == [.switchDevice(id: "lamp", target: .toggle)])
        #expect(p.echo.id == "x-1")
        #expect(P.error(.request("switch"), #"{"state":"ON"}"#) == "\"device\": is required")
        #expect(P.error(.request("switch"), #"{"device":"lamp","state":"half"}"#) == "\"state\": must be ON, OFF or TOGGLE, not \"half\"")
    }

    @Test func genericCommand() throws {
        let p = try P.parse(.request("command"), #"{"command":"report_switch","id":"lamp","state":"ON","manual":true,"command_id":"g-1"}"#)
        #expect(p.commands == [.reportSwitch(id: "lamp", state: .on, manual: true)])
        #expect(p.commandId == "g-1")
        let reading = try P.parse(.request("command"), #"{"command":"record_reading","device":"lamp","quantity":"power","value":"12.5"}"#)
        #expect(reading.commands == [.recordReading(subject: .device("lamp"), quantity: .power, value: 12.5, measuredAt: P.now)])
        #expect(
            P.error(.request("command"), #"{"command":"reboot"}"#)?.hasPrefix(
                "\"command\": unknown command \"reboot\"; known: register_device") == true)
        #expect(P.error(.request("command"), #"{"id":"lamp"}"#) == "\"command\": is required")
    }

    @Test func queries() throws {
        #expect(try P.parse(.request("devices"), "").query == .devices)
        #expect(try P.parse(.request("devices"), " \n").query == .devices)
        let d = try P.parse(.request("devices"), #"{"transaction":7}"#)
        #expect(d.query == .devices && d.commands.isEmpty && d.echo.transaction == 7)
        #expect(try P.parse(.request("animals"), "{}").query == .animals)
        #expect(try P.parse(.request("device/get"), #"{"id":"lamp"}"#).query == .device("lamp"))
        #expect(try P.parse(.request("animal/get"), #"{"id":"rex"}"#).query == .animal("rex"))
        #expect(P.error(.request("device/get"), "{}") == "\"id\": is required")
        #expect(P.error(.request("device/get"), "") == "empty payload")
        #expect(
            P.error(.request("animal/get"), #"{"id":"a+b"}"#)
                == "\"id\": \"a+b\" is not a valid animal id: ids are 1 to 64 characters of A-Z, a-z, 0-9, _ and -")
    }

    @Test func historyQueriesAreCheckedByTheDomainWithCodes() throws {
        let q = try P.parse(
            .request("history"),
            #"{"subject":"animal/rex","quantity":"heart_rate","from":"2026-11-22T00:00:00Z","to":"2026-11-22T02:00:00+01:00","bucket":"1m"}"#
        )
        #expect(
            q.query
                == .history(
                    HistoryQuery(
                        subject: .animal("rex"), quantity: .heartRate, from: ISO8601.parse("2026-11-22T00:00:00Z")!,
                        to: ISO8601.parse("2026-11-22T01:00:00Z")!, resolution: .minute)))
        do {
            _ = try P.parse(
                .request("history"),
                #"{"subject":"device/lamp","quantity":"power","from":"2026-11-22T00:00:00Z","to":"2026-11-21T00:00:00Z","bucket":"1h"}"#)
            Issue.record("accepted")
        } catch {
            #expect(error.code == "bad_range")
            #expect(AnswerJSON.error(error)["code"] == "bad_range")
        }
        #expect(
            P.error(.request("history"), #"{"subject":"device/lamp","quantity":42,"from":"a","to":"b","bucket":"1h"}"#)
                == "\"quantity\": must be a string")
    }

    @Test func unknownRequest() {
        let e = P.fullError(.request("reboot"), #"{"id":"r-1"}"#)
        #expect(
            e?.message
                == "unknown request \"reboot\"; known: device/add, device/rename, device/remove, switch, command, devices, device/get, animals, animal/get, group/define, group/remove, groups, scene/define, scene/remove, scene/apply, scenes, all-off, discovered, beacons/unknown, animal/erase-owner, history"
        )
        #expect(e?.echo.id == "r-1")
        #expect(P.error(.request("device/explode"), "")?.hasPrefix("unknown request \"device/explode\"") == true)
    }

    // MARK: Keys and sizes, every route

    /// A payload every route accepts, with every key it takes. Covers every request name.
    static let everyKey: [(route: RequestRoute, payload: String)] = [
        (
            .request("device/add"),
            #"{"id":"v","driver":"virtual","name":"V","config":{},"hardware_id":"h","command_id":"c","transaction":1}"#
        ),
        (.request("device/rename"), #"{"id":"lamp","name":"L","command_id":"c","transaction":1}"#),
        (.request("device/remove"), #"{"id":"lamp","command_id":"c","transaction":1}"#),
        (.request("switch"), #"{"device":"lamp","state":"ON","command_id":"c","id":"x","transaction":1}"#),
        (.request("command"), #"{"command":"switch","id":"lamp","state":"ON","command_id":"c","transaction":1}"#),
        (.request("devices"), #"{"id":"x","transaction":1}"#),
        (.request("device/get"), #"{"id":"lamp","transaction":1}"#),
        (.request("animals"), #"{"id":"x","transaction":1}"#),
        (.request("animal/get"), #"{"id":"rex","transaction":1}"#),
        (.request("group/define"), #"{"id":"g","name":"G","members":["lamp"],"command_id":"c","transaction":1}"#),
        (.request("group/remove"), #"{"id":"g","command_id":"c","transaction":1}"#),
        (.request("groups"), #"{"id":"x","transaction":1}"#),
        (.request("scene/define"), #"{"id":"s","name":"S","states":{"lamp":"ON"},"command_id":"c","transaction":1}"#),
        (.request("scene/remove"), #"{"id":"s","command_id":"c","transaction":1}"#),
        (.request("scene/apply"), #"{"id":"s","command_id":"c","transaction":1}"#),
        (.request("scenes"), #"{"id":"x","transaction":1}"#),
        (.request("all-off"), #"{"command_id":"c","id":"x","transaction":1}"#),
        (.request("discovered"), #"{"id":"x","transaction":1}"#),
        (.request("beacons/unknown"), #"{"id":"x","transaction":1}"#),
        (.request("animal/erase-owner"), #"{"id":"rex","command_id":"c","transaction":1}"#),
        (
            .request("history"),
            #"{"subject":"device/lamp","quantity":"power","from":"2026-11-22T00:00:00Z","to":"2026-11-23T00:00:00Z","bucket":"1h","id":"x","transaction":1}"#
        ),
        (.switchSet("lamp"), #"{"state":"ON","id":"c","command_id":"c","transaction":1}"#),
        (.groupSwitchSet("g"), #"{"state":"ON","id":"c","command_id":"c","transaction":1}"#),
        (
            .activationsSet("lamp"),
            #"{"op":"add","name":"e","start":1795456800,"length":30,"period":1440,"device":"lamp","id":"c","command_id":"c","transaction":1}"#
        ),
        (
            .activationsSet("lamp"),
            #"{"op":"add","name":"e","start":1795456800,"length":30,"repeat":{"at":"18:00","days":["mon"],"time_zone":"UTC"}}"#
        ),
        (
            .animalAdmit,
            #"""
            {"id":"rex","name":"Rex","species":"dog","weight_kg":3,"beacon":"b","gender":"m","birth_date":"2020-01-01","breed":"x","coat":"x",
             "owner_name":"A","owner_address":"B","owner_phone":"C","motive":"x","veterinarian":"x","observations":"x","photo":"x",
             "command_id":"c","transaction":1}
            """#
        ),
        (
            .animalDischarge("rex"),
            #"{"id":"rex","exit_weight_kg":3,"veterinarian":"v","observations":"o","command_id":"c","transaction":1}"#
        ),
        (.animalVitals("rex"), #"{"heart_rate":80,"temperature":38,"measured_at":1795000000,"command_id":"c","transaction":1}"#)
    ]

    @Test func everyRequestNameIsCovered() {
        let covered = Set(Self.everyKey.compactMap { entry -> String? in if case .request(let name) = entry.route { name } else { nil } })
        #expect(covered == Set(RequestParser.requestNames))
        #expect(Set(RequestParser.requestKeys.keys) == Set(RequestParser.requestNames).subtracting(["command"]))
    }

    @Test func everyKeyTheRouteTakesIsAccepted() {
        for (route, payload) in Self.everyKey {
            do { _ = try P.parse(route, payload) } catch { Issue.record("\(route): \(error.message)") }
        }
    }

    /// An extra key anywhere is refused, named, with the keys the route takes; nothing is parsed.
    @Test func unknownKeysAreRefused() {
        for (route, payload) in Self.everyKey {
            let extra = "{\"colour\":\"red\"," + payload.drop { $0 != "{" }.dropFirst()
            let e = P.fullError(route, extra)
            #expect(e?.message.hasPrefix("\"colour\": is not a known field (known: ") == true, "\(route): \(e?.message ?? "parsed")")
            #expect(e?.echo.transaction == (payload.contains("transaction") ? JSONValue?.some(1) : JSONValue?.none), "\(route)")
        }
        // Two of them, word for word.
        #expect(
            P.error(.request("all-off"), #"{"status":"ok","data":[1]}"#)
                == "\"status\": is not a known field (known: cause, command_id, id, transaction)")
        #expect(P.error(.request("devices"), #"{"command_id":"x"}"#) == "\"command_id\": is not a known field (known: id, transaction)")
        #expect(
            P.error(.request("device/get"), #"{"id":"lamp","device":"lamp"}"#)
                == "\"device\": is not a known field (known: id, transaction)")
        #expect(
            P.error(.request("command"), #"{"command":"switch","id":"lamp","state":"ON","colour":"red"}"#)
                == "\"colour\": is not a known field (known: cause, command, command_id, id, state, transaction)")
        #expect(
            P.error(.switchSet("lamp"), #"{"state":"ON","brightness":5}"#)
                == "\"brightness\": is not a known field (known: cause, command_id, id, state, transaction)")
        #expect(
            P.error(.animalVitals("rex"), #"{"heart_rate":80,"pulse":80}"#)
                == "\"pulse\": is not a known field (known: cause, command_id, heart_rate, measured_at, temperature, transaction)")
        // Nested objects too.
        #expect(
            P.error(
                .activationsSet("lamp"), #"{"op":"add","name":"e","start":1,"length":3,"repeat":{"at":"18:00","time_zone":"UTC","tz":"x"}}"#
            )
                == "\"repeat.tz\": is not a known field (known: at, days, time_zone)")
        #expect(
            P.error(.request("command"), #"{"command":"report_activations","id":"lamp","found":[{"name":"a","start":1,"length":3,"x":1}]}"#)
                == "\"found[0].x\": is not a known field (known: length, name, period, start)")
    }

    /// Every byte counts toward the 64 KiB limit, whitespace too, for every route.
    @Test func whitespaceCountsTowardTheLimit() throws {
        let routes =
            RequestParser.requestNames.map { RequestRoute.request($0) } + [
                .switchSet("lamp"), .groupSwitchSet("g"), .activationsSet("lamp"),
                .animalAdmit, .animalDischarge("rex"), .animalVitals("rex")
            ]
        for route in routes {
            #expect(P.error(route, [UInt8](repeating: 0x20, count: 1_048_576)) == "payload of 1048576 bytes exceeds 65536", "\(route)")
            #expect(P.error(route, [UInt8](repeating: 0x0A, count: 65_537)) == "payload of 65537 bytes exceeds 65536", "\(route)")
        }
        // Up to the limit, a blank request without arguments is still the request.
        #expect(
            try P.parse(.request("all-off"), String(repeating: " ", count: 65_536)).commands == [.applyScene(id: HouseholdLimits.allOff)])
        #expect(try P.parse(.request("devices"), String(repeating: "\n", count: 65_536)).query == .devices)
    }

    // MARK: Responses

    @Test func responses() {
        #expect(
            AnswerJSON.ok(["count": 2], echo: RequestParser.Echo(id: "c-1")).serialized()
                == #"{"status":"ok","data":{"count":2},"id":"c-1"}"#)
        #expect(AnswerJSON.ok().serialized() == #"{"status":"ok","data":null,"id":null}"#)
        #expect(
            AnswerJSON.error("no device \"x\" is registered", code: "unknown_device", echo: RequestParser.Echo(id: 5, transaction: "t"))
                .serialized()
                == #"{"status":"error","error":"no device \"x\" is registered","code":"unknown_device","id":5,"transaction":"t"}"#)
        #expect(AnswerJSON.error(RequestError("empty payload")).serialized() == #"{"status":"error","error":"empty payload","id":null}"#)
    }
}

@Suite struct StatePayloadTests {
    @Test func fullDevice() {
        let w = P.world()
        let lamp = w.state.devices["lamp"]!
        let json = StateJSON.device(Hub.DeviceView(w.state, lamp), dayKey: "2026-11-18")
        #expect(
            json.serialized() == """
                {"id":"lamp","name":"Lamp","driver":"powerplug","strip":null,"switch":"ON","mode":"manual",\
                "pending":{"state":"OFF","since":"2026-11-18T11:06:43.000000Z","command_id":"c-9"},\
                "last_failure":{"state":"ON","reason":"no answer within 5 s","at":"2026-11-18T11:06:41.000000Z"},\
                "availability":"online","availability_reason":"","power":60.5,"voltage":230,"current":0.263,\
                "energy":0.235,"energy_today":0.235,\
                "activations":[{"name":"evening","start":"2026-11-23T18:00:00.000000Z","length":30,"period":1440,"repeat":null}],\
                "activations_diverged":null,"activation_conflicts":[],"removed":false}
                """)
        #expect(StateJSON.device(Hub.DeviceView(w.state, lamp), dayKey: "2026-11-19")["energy_today"] == 0)
        #expect(StateJSON.device(Hub.DeviceView(w.state, lamp), dayKey: nil)["energy_today"] == .null)
    }

    @Test func freshAndRemovedDevices() {
        let w = P.world()
        let fresh = StateJSON.device(Hub.DeviceView(w.state, w.state.devices["fresh"]!), dayKey: "2026-11-18")
        #expect(
            fresh.serialized() == """
                {"id":"fresh","name":"Fresh","driver":"virtual","strip":null,"switch":null,"mode":"automatic","pending":null,"last_failure":null,\
                "availability":"unknown","availability_reason":"","power":null,"voltage":null,"current":null,"energy":null,\
                "energy_today":null,"activations":[],"activations_diverged":null,"activation_conflicts":[],"removed":false}
                """)
        let gone = StateJSON.device(Hub.DeviceView(w.state, w.state.devices["gone"]!), dayKey: nil)
        #expect(gone["removed"] == true)
    }

    @Test func plainSubtopics() {
        let w = P.world()
        let t = MQTTTopics()
        let lamp = StateJSON.devicePlain(w.state.devices["lamp"]!, energy: w.state.energy["lamp"], topics: t)
        #expect(
            lamp.map(\.topic) == [
                "hub/device/lamp/switch", "hub/device/lamp/power", "hub/device/lamp/energy", "hub/device/lamp/voltage",
                "hub/device/lamp/current", "hub/device/lamp/availability"
            ])
        #expect(lamp.map(\.payload) == ["ON", "60.5", "0.235", "230", "0.263", "online"])
        #expect(StateJSON.devicePlain(w.state.devices["fresh"]!, energy: nil, topics: t).isEmpty)
        let gone = StateJSON.devicePlain(w.state.devices["gone"]!, energy: nil, topics: t)
        #expect(gone.map(\.topic) == ["hub/device/gone/availability"] && gone.map(\.payload) == ["offline"])
        #expect(
            StateJSON.deviceTopics("lamp", topics: t) == [
                "hub/device/lamp/state", "hub/device/lamp/switch", "hub/device/lamp/power",
                "hub/device/lamp/energy", "hub/device/lamp/availability"
            ])
    }

    @Test func rounding() {
        #expect(StateJSON.kWh(1234.5678) == 1.235)
        #expect(StateJSON.kWh(1000) == 1)
        #expect(StateJSON.kWh(0.0004) == 0)
        #expect(StateJSON.kWh(-0.0004).serialized() == "0")
        #expect(StateJSON.rounded(60.25, 1) == 60.3)
        #expect(StateJSON.rounded(.nan, 1) == .null)
        #expect(StateJSON.rounded(1e20, 3) == .number(1e20))
    }

    @Test func animalWithoutPersonalData() {
        let w = P.world()
        let rex = StateJSON.animal(w.state.animals["rex"]!)
        #expect(
            rex.serialized() == """
                {"id":"rex","name":"Rex","species":"dog","status":"admitted","room":"ward-2","last_seen":"2026-11-18T11:07:40.000000Z",\
                "present":true,"beacon":"1de4b189115e45f6b44e5093522699a1","heart_rate":88,"temperature":38.6,\
                "admitted_at":"2026-11-18T11:06:40.000000Z","discharged_at":null}
                """)
        let text = rex.serialized()
        #expect(!text.contains("Ana") && !text.contains("5555") && !text.contains("Rua") && !text.contains("owner"))
        let tom = StateJSON.animal(w.state.animals["tom"]!)
        #expect(tom["status"] == "discharged" && tom["room"] == .null && tom["last_seen"] == .null && tom["heart_rate"] == .null)
        #expect(tom["discharged_at"] == "2026-11-18T12:06:40.000000Z")
    }
}

@Suite struct HomeAssistantDiscoveryTests {
    let ha = HomeAssistantDiscovery()

    @Test func deviceEntities() throws {
        let w = P.world()
        let configs = ha.deviceConfigs(w.state.devices["lamp"]!, readings: [.power, .energy])
        #expect(
            configs.map(\.topic) == [
                "homeassistant/switch/hub/lamp_switch/config", "homeassistant/sensor/hub/lamp_power/config",
                "homeassistant/sensor/hub/lamp_energy/config"
            ])
        let (sw, power, energy) = (configs[0].payload, configs[1].payload, configs[2].payload)
        #expect(
            sw.serialized() == """
                {"name":null,"unique_id":"AA:BB:CC_switch","state_topic":"hub/device/lamp/switch","command_topic":"hub/device/lamp/switch/set",\
                "payload_on":"ON","payload_off":"OFF",\
                "availability":[{"topic":"hub/status"},{"topic":"hub/device/lamp/availability"}],"availability_mode":"all",\
                "device":{"identifiers":["AA:BB:CC"],"name":"Lamp","model":"powerplug","manufacturer":"the hub"},"origin":{"name":"the hub"}}
                """)
        #expect(power["device_class"] == "power" && power["state_class"] == "measurement" && power["unit_of_measurement"] == "W")
        #expect(power["state_topic"] == "hub/device/lamp/power" && power["unique_id"] == "AA:BB:CC_power" && power["name"] == "Power")
        #expect(energy["device_class"] == "energy" && energy["state_class"] == "total_increasing" && energy["unit_of_measurement"] == "kWh")
        #expect(energy["state_topic"] == "hub/device/lamp/energy" && energy["unique_id"] == "AA:BB:CC_energy")
        for config in configs {
            #expect(config.payload["availability"] == sw["availability"] && config.payload["availability_mode"] == "all")
            #expect(config.payload["device"] == sw["device"])
            #expect(config.payload["command_topic"] == nil || config.topic.contains("/switch/"))
        }
        // The state and command topics the configs name are the ones the hub publishes and routes.
        let t = MQTTTopics()
        #expect(t.route(topic: sw["command_topic"]!.stringValue!) == .command(.switchSet("lamp")))
        #expect(
            StateJSON.devicePlain(w.state.devices["lamp"]!, energy: w.state.energy["lamp"], topics: t).map(\.topic)
                == [
                    sw["state_topic"]!.stringValue!, power["state_topic"]!.stringValue!, energy["state_topic"]!.stringValue!,
                    t.deviceVoltage("lamp"), t.deviceCurrent("lamp"), t.deviceAvailability("lamp")
                ])
    }

    @Test func uniqueIdsSurviveRenames() {
        var w = P.world()
        let before = ha.deviceConfigs(w.state.devices["lamp"]!, readings: [.power, .energy])
        w.apply(.deviceRenamed(DeviceRenamed(device: "lamp", name: "Reading lamp")), at: P.t0 + 10)
        let after = ha.deviceConfigs(w.state.devices["lamp"]!, readings: [.power, .energy])
        #expect(before.map(\.topic) == after.map(\.topic))
        #expect(before.map { $0.payload["unique_id"] } == after.map { $0.payload["unique_id"] })
        #expect(before[0].payload["device"]?["identifiers"] == after[0].payload["device"]?["identifiers"])
        #expect(after[0].payload["device"]?["name"] == "Reading lamp")
    }

    @Test func identityWithoutHardwareId() {
        let w = P.world()
        let configs = ha.deviceConfigs(w.state.devices["fresh"]!, readings: [.power, .energy])
        #expect(configs.map { $0.payload["unique_id"] } == ["hub_fresh_switch", "hub_fresh_power", "hub_fresh_energy"])
        #expect(configs[0].payload["device"]?["identifiers"] == ["hub_fresh"])
        let custom = HomeAssistantDiscovery(topics: MQTTTopics(base: "site 1/hub", discoveryPrefix: "ha"))
        #expect(custom.nodeId == "site_1_hub")
        let c = custom.deviceConfigs(w.state.devices["fresh"]!, readings: [.power, .energy])
        #expect(c[0].topic == "ha/switch/site_1_hub/fresh_switch/config")
        #expect(c[0].payload["unique_id"] == "site_1_hub_fresh_switch")
        #expect(c[0].payload["command_topic"] == "site 1/hub/device/fresh/switch/set")
    }

    @Test func removedDevices() {
        let w = P.world()
        #expect(ha.deviceConfigs(w.state.devices["gone"]!, readings: [.power, .energy]).isEmpty)
        #expect(
            ha.deviceRemovals(w.state.devices["gone"]!) == [
                "homeassistant/switch/hub/gone_switch/config",
                "homeassistant/sensor/hub/gone_power/config",
                "homeassistant/sensor/hub/gone_energy/config",
                "homeassistant/sensor/hub/gone_voltage/config",
                "homeassistant/sensor/hub/gone_current/config"
            ])
        // Removals clear exactly what configs published with every sensor.
        #expect(ha.deviceRemovals(id: "lamp") == ha.deviceConfigs(w.state.devices["lamp"]!, readings: Set(Quantity.allCases)).map(\.topic))
    }

    /// Sensors only for the quantities the driver reports: none for a plug without a meter (its
    /// stale ones cleared), voltage and current for one that measures them.
    @Test func sensorsFollowTheReadingsOffered() throws {
        let w = P.world()
        let lamp = w.state.devices["lamp"]!
        #expect(ha.deviceConfigs(lamp, readings: []).map(\.topic) == ["homeassistant/switch/hub/lamp_switch/config"])
        #expect(
            ha.sensorRemovals(id: "lamp", offered: []) == [
                "homeassistant/sensor/hub/lamp_power/config", "homeassistant/sensor/hub/lamp_energy/config",
                "homeassistant/sensor/hub/lamp_voltage/config", "homeassistant/sensor/hub/lamp_current/config"
            ])
        // Only meters get sensors (a device's temperature or heart rate is not one).
        let all = ha.deviceConfigs(lamp, readings: Set(Quantity.allCases))
        #expect(
            all.map(\.topic) == [
                "homeassistant/switch/hub/lamp_switch/config", "homeassistant/sensor/hub/lamp_power/config",
                "homeassistant/sensor/hub/lamp_energy/config", "homeassistant/sensor/hub/lamp_voltage/config",
                "homeassistant/sensor/hub/lamp_current/config"
            ])
        #expect(ha.sensorRemovals(id: "lamp", offered: Set(Quantity.allCases)).isEmpty)
        let (voltage, current) = (all[3].payload, all[4].payload)
        #expect(voltage["device_class"] == "voltage" && voltage["unit_of_measurement"] == "V" && voltage["state_class"] == "measurement")
        #expect(
            voltage["state_topic"] == "hub/device/lamp/voltage" && voltage["unique_id"] == "AA:BB:CC_voltage"
                && voltage["name"] == "Voltage")
        #expect(current["device_class"] == "current" && current["unit_of_measurement"] == "A" && current["state_class"] == "measurement")
        #expect(current["state_topic"] == "hub/device/lamp/current" && current["unique_id"] == "AA:BB:CC_current")
        // The state topics the sensors name are published, with the state JSON's rounding.
        let plain = StateJSON.devicePlain(lamp, energy: w.state.energy["lamp"], topics: MQTTTopics())
        #expect(plain.first { $0.topic == "hub/device/lamp/voltage" }?.payload == "230")
        #expect(plain.first { $0.topic == "hub/device/lamp/current" }?.payload == "0.263")
    }

    /// A scene is a `scene` entity whose press is the request that applies it.
    @Test func sceneEntity() throws {
        let scene = SceneRecord(id: "evening", name: "Evening", targets: [DeviceTarget(device: "lamp", state: .on)])
        let (topic, config) = ha.sceneConfig(scene)
        #expect(topic == "homeassistant/scene/hub/scene_evening/config" && topic == ha.sceneConfigTopic("evening"))
        #expect(config["command_topic"] == "hub/request/scene/apply" && config["payload_on"] == #"{"id":"evening"}"#)
        #expect(config["unique_id"] == "hub_scene_evening" && config["availability_topic"] == "hub/status")
        #expect(config["device"]?["name"] == "Evening" && config["name"] == .null)
        let t = MQTTTopics()
        #expect(t.route(topic: config["command_topic"]!.stringValue!) == .command(.request("scene/apply")))
    }

    @Test func animalEntities() {
        let w = P.world()
        let configs = ha.animalConfigs(w.state.animals["rex"]!)
        #expect(
            configs.map(\.topic) == [
                "homeassistant/sensor/hub/rex_room/config", "homeassistant/sensor/hub/rex_heart_rate/config",
                "homeassistant/sensor/hub/rex_temperature/config"
            ])
        let (room, heart, temp) = (configs[0].payload, configs[1].payload, configs[2].payload)
        let beacon: JSONValue = "1de4b189115e45f6b44e5093522699a1"
        for c in [room, heart, temp] {
            #expect(c["state_topic"] == "hub/animal/rex/state")
            #expect(c["device"]?["identifiers"] == .array([beacon]))
            #expect(c["device"]?["name"] == "Rex" && c["device"]?["model"] == "dog")
            #expect(c["availability"] == [["topic": "hub/status"]])
            #expect(!c.serialized().contains("Ana"))
        }
        #expect(room["value_template"] == "{{ value_json.room }}" && room["unique_id"] == "1de4b189115e45f6b44e5093522699a1_room")
        #expect(room["device_class"] == nil && room["unit_of_measurement"] == nil)
        #expect(
            heart["value_template"] == "{{ value_json.heart_rate }}" && heart["unit_of_measurement"] == "bpm"
                && heart["state_class"] == "measurement")
        #expect(
            temp["value_template"] == "{{ value_json.temperature }}" && temp["device_class"] == "temperature"
                && temp["unit_of_measurement"] == "°C" && temp["state_class"] == "measurement")
        // The templates read keys the state payload has.
        let state = StateJSON.animal(w.state.animals["rex"]!)
        #expect(state["room"] != nil && state["heart_rate"] != nil && state["temperature"] != nil)
    }

    @Test func dischargedAnimals() {
        let w = P.world()
        #expect(ha.animalConfigs(w.state.animals["tom"]!).isEmpty)
        #expect(
            ha.animalRemovals(w.state.animals["tom"]!) == [
                "homeassistant/sensor/hub/tom_room/config",
                "homeassistant/sensor/hub/tom_heart_rate/config",
                "homeassistant/sensor/hub/tom_temperature/config"
            ])
        #expect(ha.animalRemovals(id: "rex") == ha.animalConfigs(w.state.animals["rex"]!).map(\.topic))
    }
}
