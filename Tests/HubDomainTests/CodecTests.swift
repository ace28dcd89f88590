import Testing

@testable import HubDomain

@Suite struct BinaryCodecTests {
    @Test func everyTypeIsCoveredBySamples() {
        #expect(Set(sampleEvents.map(\.typeName)) == Set(HubEvent.allTypeNames))
    }

    @Test(arguments: sampleEvents)
    func binaryRoundTrip(_ event: HubEvent) throws {
        let bytes = event.encodePayload()
        let decoded = try HubEvent.decode(type: event.typeName, schemaVersion: event.schemaVersion, payload: bytes)
        #expect(decoded == event)
        #expect(decoded.encodePayload() == bytes)
    }

    @Test(arguments: sampleEvents)
    func truncatedAtEveryLengthFails(_ event: HubEvent) {
        let bytes = event.encodePayload()
        for n in 0..<bytes.count {
            #expect(throws: DecodingFailure.self) {
                try HubEvent.decode(type: event.typeName, schemaVersion: event.schemaVersion, payload: Array(bytes[0..<n]))
            }
        }
    }

    @Test(arguments: sampleEvents)
    func trailingBytesFail(_ event: HubEvent) {
        #expect(throws: DecodingFailure.self) {
            try HubEvent.decode(type: event.typeName, schemaVersion: event.schemaVersion, payload: event.encodePayload() + [0])
        }
    }

    @Test func unknownTypeAndFutureVersion() {
        let p = sampleEvents[4].encodePayload()
        do {
            _ = try HubEvent.decode(type: "SwitchExploded", schemaVersion: 1, payload: p)
            Issue.record("expected failure")
        } catch {
            #expect(error.type == "SwitchExploded")
            #expect(error.description.contains("unknown event type"))
        }
        do {
            _ = try HubEvent.decode(type: "SwitchRequested", schemaVersion: 2, payload: p)
            Issue.record("expected failure")
        } catch {
            #expect(error.description.contains("SwitchRequested v2"))
            #expect(error.description.contains("newer"))
        }
        #expect(throws: DecodingFailure.self) {
            try HubEvent.decode(type: "SwitchRequested", schemaVersion: 0, payload: p)
        }
    }

    @Test func badEnumByteNamesTheField() {
        var p = HubEvent.switchToggled(SwitchToggled(device: "d", state: .on, cause: .manual)).encodePayload()
        p[p.count - 1] = 9  // cause
        do {
            _ = try HubEvent.decode(type: "SwitchToggled", schemaVersion: 1, payload: p)
            Issue.record("expected failure")
        } catch {
            #expect(error.field == "cause")
            #expect(error.description == "cannot decode SwitchToggled v1, field 'cause': invalid enum raw value 9")
        }
        var q = HubEvent.readingRecorded(ReadingRecorded(subject: .device("d"), quantity: .power, value: 1, measuredAt: 0)).encodePayload()
        q[0] = 7
        #expect(throws: DecodingFailure.self) { try HubEvent.decode(type: "ReadingRecorded", schemaVersion: 1, payload: q) }
        var r = HubEvent.readingRecorded(ReadingRecorded(subject: .device("d"), quantity: .power, value: 1, measuredAt: 0)).encodePayload()
        r[6] = 6  // quantity byte after kind(1)+len(4)+"d"(1)
        do {
            _ = try HubEvent.decode(type: "ReadingRecorded", schemaVersion: 1, payload: r)
            Issue.record("expected failure")
        } catch { #expect(error.field == "quantity") }
    }

    @Test func badBoolAndPresenceBytes() {
        var p = HubEvent.availabilityChanged(AvailabilityChanged(device: "d", available: true, reason: "")).encodePayload()
        p[5] = 2
        #expect(throws: DecodingFailure.self) { try HubEvent.decode(type: "AvailabilityChanged", schemaVersion: 1, payload: p) }
        var q = HubEvent.deviceRegistered(DeviceRegistered(device: "d", driver: "x", name: "n", config: "{}", hardwareId: nil))
            .encodePayload(schemaVersion: 1)
        q[q.count - 1] = 3
        do {
            _ = try HubEvent.decode(type: "DeviceRegistered", schemaVersion: 1, payload: q)
            Issue.record("expected failure")
        } catch { #expect(error.field == "hardwareId") }
    }

    /// `DeviceRegistered` 2 adds the strip an outlet belongs to; a schema-1 record (every log before
    /// strips) decodes as a device of its own, and is written again byte for byte (import).
    @Test func deviceRegisteredSchema1ReadsAsADeviceOfItsOwn() throws {
        let device = HubEvent.deviceRegistered(DeviceRegistered(device: "d", driver: "x", name: "n", config: "{}", hardwareId: "HW"))
        let v1 = device.encodePayload(schemaVersion: 1)
        #expect(device.schemaVersion == 2)
        #expect(device.encodePayload() == v1 + [0])  // schema 2: one presence byte, 0 = not an outlet
        #expect(try HubEvent.decode(type: "DeviceRegistered", schemaVersion: 1, payload: v1) == device)
        let outlet = sampleEvents.first { if case .deviceRegistered(let e) = $0 { e.outlet != nil } else { false } }!
        #expect(throws: DecodingFailure.self) {
            try HubEvent.decode(type: "DeviceRegistered", schemaVersion: 1, payload: outlet.encodePayload())
        }
        let json = try HubEvent.fromJSON(type: "DeviceRegistered", schemaVersion: 2, body: outlet.jsonBody())
        #expect(json == outlet)
        do {
            var body = outlet.jsonBody()
            body["outlet_of"] = try JSONValue.parse(#"{"strip":"desk","strip_name":"Desk","number":0}"#)
            _ = try HubEvent.fromJSON(type: "DeviceRegistered", schemaVersion: 2, body: body)
            Issue.record("expected failure")
        } catch let error as DecodingFailure { #expect(error.field == "outlet_of.number") }
    }

    @Test func invalidUTF8Fails() {
        var p = HubEvent.deviceRemoved(DeviceRemoved(device: "ab")).encodePayload()
        p[4] = 0xC3; p[5] = 0x28
        do {
            _ = try HubEvent.decode(type: "DeviceRemoved", schemaVersion: 1, payload: p)
            Issue.record("expected failure")
        } catch {
            #expect(error.field == "device")
            #expect(error.reason.contains("UTF-8"))
        }
    }

    @Test func layoutIsLittleEndian() {
        let p = HubEvent.switchRequested(SwitchRequested(device: "ab", state: .on)).encodePayload()
        #expect(p == [2, 0, 0, 0, 0x61, 0x62, 1])
        let e = HubEvent.energyCounterReset(EnergyCounterReset(device: "", previousWh: 1, newWh: 0)).encodePayload()
        #expect(e == [0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0xF0, 0x3F] + [0, 0, 0, 0, 0, 0, 0, 0])
    }

    @Test func bitPatternsSurvive() throws {
        let nz = HubEvent.energyCounterReset(EnergyCounterReset(device: "d", previousWh: -0.0, newWh: .nan))
        let d = try HubEvent.decode(type: nz.typeName, schemaVersion: 1, payload: nz.encodePayload())
        #expect(d.encodePayload() == nz.encodePayload())
    }
}

@Suite struct JSONCodecTests {
    @Test(arguments: sampleEvents)
    func jsonRoundTrip(_ event: HubEvent) throws {
        let body = event.jsonBody()
        let text = body.serialized()
        let reparsed = try JSONValue.parse(text)
        #expect(reparsed == body)
        let decoded = try HubEvent.fromJSON(type: event.typeName, schemaVersion: event.schemaVersion, body: reparsed)
        #expect(decoded == event)
        #expect(decoded.jsonBody().serialized() == text)
    }

    @Test func snakeCaseShape() {
        let e = HubEvent.readingRecorded(ReadingRecorded(subject: .device("m1"), quantity: .heartRate, value: 72, measuredAt: t0))
        #expect(
            e.jsonBody().serialized()
                == #"{"subject":{"kind":"device","id":"m1"},"quantity":"heart_rate","value":72,"unit":"bpm","measured_at":"2026-11-22T18:00:00.000000Z"}"#
        )
        let a = HubEvent.activationChanged(
            ActivationChanged(
                device: "p", change: .updated, name: "n", start: 1_795_370_400,
                lengthMinutes: 30, periodMinutes: 1440))
        #expect(
            a.jsonBody().serialized()
                == #"{"device":"p","change":"updated","name":"n","start":"2026-11-22T18:00:00.000000Z","length_minutes":30,"period_minutes":1440,"repeat":null}"#
        )
        let t = HubEvent.switchToggled(SwitchToggled(device: "p", state: .on, cause: .deviceReport))
        #expect(t.jsonBody().serialized() == #"{"device":"p","state":"on","cause":"device_report"}"#)
    }

    @Test func wrongShapesNameTheField() throws {
        func failure(_ type: String, _ json: String) -> DecodingFailure? {
            do {
                _ = try HubEvent.fromJSON(type: type, schemaVersion: 1, body: try JSONValue.parse(json))
                return nil
            } catch let e as DecodingFailure { return e } catch { return nil }
        }
        #expect(failure("SwitchRequested", #"{"device":"p"}"#)?.field == "state")
        #expect(failure("SwitchRequested", #"{"device":"p","state":"dim"}"#)?.field == "state")
        #expect(failure("SwitchRequested", #"{"device":5,"state":"on"}"#)?.field == "device")
        #expect(
            failure(
                "ActivationChanged",
                #"{"device":"p","change":"added","name":"n","start":"2026-11-22T18:00:00.5Z","length_minutes":1,"period_minutes":0}"#)?
                .field == "start")
        #expect(
            failure(
                "ActivationChanged",
                #"{"device":"p","change":"added","name":"n","start":"2026-11-22T18:00:00Z","length_minutes":1.5,"period_minutes":0}"#)?
                .field == "length_minutes")
        #expect(
            failure(
                "ActivationChanged",
                #"{"device":"p","change":"added","name":"n","start":"2026-11-22T18:00:00Z","length_minutes":1,"period_minutes":70000}"#)?
                .field == "period_minutes")
        #expect(
            failure(
                "ReadingRecorded",
                #"{"subject":{"kind":"robot","id":"x"},"quantity":"power","value":1,"measured_at":"2026-11-22T18:00:00Z"}"#)?.field
                == "subject.kind")
        #expect(
            failure("ReadingRecorded", #"{"subject":{"kind":"device"},"quantity":"power","value":1,"measured_at":"2026-11-22T18:00:00Z"}"#)?
                .field == "subject.id")
        #expect(
            failure(
                "ReadingRecorded",
                #"{"subject":{"kind":"device","id":"x"},"quantity":"power","value":"1","measured_at":"2026-11-22T18:00:00Z"}"#)?.field
                == "value")
        #expect(
            failure("ReadingRecorded", #"{"subject":{"kind":"device","id":"x"},"quantity":"power","value":1,"measured_at":"yesterday"}"#)?
                .field == "measured_at")
        #expect(failure("AvailabilityChanged", #"{"device":"p","available":"yes","reason":""}"#)?.field == "available")
        #expect(
            failure("AnimalAdmitted", #"{"animal":"a","name":"n","weight_kg":1,"species":"dog","beacon":"b","gender":3}"#)?.field
                == "gender")
        #expect(failure("DeviceRemoved", "[]") != nil)
        #expect(failure("Nope", "{}")?.reason == "unknown event type")
        #expect(failure("DeviceRemoved", #"{"device":"p"}"#) == nil)
        do {
            _ = try HubEvent.fromJSON(type: "DeviceRemoved", schemaVersion: 2, body: ["device": "p"])
            Issue.record("expected failure")
        } catch { #expect(error.schemaVersion == 2) }
    }

    @Test func offsetTimesAreAcceptedAndOptionalsMayBeAbsent() throws {
        let e = try HubEvent.fromJSON(
            type: "AnimalSighted", schemaVersion: 1,
            body: try JSONValue.parse(#"{"animal":"rex","room":"r","beacon":"b","at":"2026-11-22T19:00:00+01:00"}"#))
        #expect(e == .animalSighted(AnimalSighted(animal: "rex", room: "r", beacon: "b", at: t0)))
        let d = try HubEvent.fromJSON(
            type: "DeviceRegistered", schemaVersion: 1,
            body: try JSONValue.parse(#"{"device":"p","driver":"k","name":"n","config":"{}"}"#))
        #expect(d == .deviceRegistered(DeviceRegistered(device: "p", driver: "k", name: "n", config: "{}", hardwareId: nil)))
    }

    @Test func streamsAndTypeNames() {
        #expect(sampleEvents[0].stream == "device/plug-1")
        #expect(sampleEvents.first { $0.typeName == "AnimalAdmitted" }?.stream == "animal/rex")
        #expect(sampleEvents.first { $0.typeName == "GroupDefined" }?.stream == "group/kitchen")
        #expect(sampleEvents.first { $0.typeName == "SceneDefined" }?.stream == "scene/movie")
        #expect(sampleEvents.last!.stream == "hub")
        for e in sampleEvents {
            #expect(e.streamKey.name == e.stream)
            #expect(e.schemaVersion == HubEvent.currentSchemaVersion(of: e.typeName))
        }
        #expect(Quantity.heartRate.rawValue == "heart_rate")
        #expect(Quantity.temperature.unit == "°C")
    }
}
