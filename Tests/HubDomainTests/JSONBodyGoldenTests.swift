import Testing

@testable import HubDomain

/// Every event's JSON body, byte for byte: the `data` of `hub export`'s lines, which the audit
/// tree's leaves and outside verifiers depend on. Written as text (``JSONText``, the export path)
/// and as a value (``JSONBuilder``, `jsonBody()`), both give these lines.
@Suite struct JSONBodyGoldenTests {
    static let golden = #"""
        {"device":"plug-1","driver":"tcp-powerplug","name":"Lawn pump","config":"{\"host\":\"10.0.0.5\",\"port\":230}","hardware_id":"AA:BB"}
        {"device":"plug_2","driver":"kasa","name":"Lámpara ☃","config":"{}","hardware_id":null}
        {"device":"plug-1","name":"Pump \"north\"\n"}
        {"device":"plug-1"}
        {"device":"plug-1","state":"on"}
        {"device":"plug-1","state":"off","cause":"device_report"}
        {"device":"plug-1","state":"on","cause":"schedule"}
        {"device":"plug-1","state":"on","reason":"timeout after 5 s"}
        {"device":"plug-1","mode":"manual"}
        {"device":"plug-1","change":"added","name":"water the lawn","start":"2026-11-22T18:00:00.000000Z","length_minutes":30,"period_minutes":1440,"repeat":null}
        {"device":"plug-1","change":"removed","name":"x","start":"2106-02-07T06:28:15.000000Z","length_minutes":65535,"period_minutes":0,"repeat":null}
        {"device":"plug-1","change":"updated","name":"evening","start":"2026-11-22T18:00:00.000000Z","length_minutes":45,"period_minutes":0,"repeat":{"at":"18:00","days":["mon","wed","fri"],"time_zone":"Europe/Lisbon"}}
        {"device":"plug-1","available":false,"reason":"connection refused"}
        {"group":"kitchen","name":"Kitchen","members":["plug-1","plug_2"]}
        {"group":"kitchen"}
        {"scene":"movie","name":"Movie night","targets":[{"device":"plug-1","state":"off"},{"device":"plug_2","state":"on"}]}
        {"scene":"movie"}
        {"origin":"group/kitchen","targets":[{"device":"plug-1","state":"on"}]}
        {"origin":"all","targets":[]}
        {"subject":{"kind":"device","id":"plug-1"},"quantity":"power","value":1234.5678901234,"unit":"W","measured_at":"2026-11-22T18:00:00.123456Z"}
        {"subject":{"kind":"animal","id":"rex"},"quantity":"heart_rate","value":88,"unit":"bpm","measured_at":"2026-11-22T18:00:00.000000Z"}
        {"subject":{"kind":"animal","id":"rex"},"quantity":"temperature","value":-0.1,"unit":"°C","measured_at":"1969-12-31T23:59:59.999999Z"}
        {"subject":{"kind":"device","id":"m"},"quantity":"energy","value":1e-07,"unit":"Wh","measured_at":"2026-11-22T18:00:00.000000Z"}
        {"subject":{"kind":"device","id":"m"},"quantity":"voltage","value":230.1,"unit":"V","measured_at":"2026-11-22T18:00:00.000000Z"}
        {"subject":{"kind":"device","id":"m"},"quantity":"current","value":1e+21,"unit":"A","measured_at":"2026-11-22T18:00:00.000000Z"}
        {"device":"plug-1","previous_wh":5021.25,"new_wh":0.5}
        {"device":"plug-1","expected":[{"name":"lawn","start":"2026-11-22T18:00:00.000000Z","length_minutes":30,"period_minutes":1440}],"found":[],"resolution":"restore"}
        {"device":"plug-1","expected":[],"found":[{"name":"a","start":"1970-01-01T00:00:00.000000Z","length_minutes":1,"period_minutes":0},{"name":"b","start":"2106-02-07T06:28:15.000000Z","length_minutes":65535,"period_minutes":65535}],"resolution":"report"}
        {"animal":"rex","name":"Rex","gender":"male","birth_date":"2020-02-29","weight_kg":31.4,"species":"dog","breed":"mixed","coat":"brown","owner_name":"Ana","owner_address":"Rua 1, Porto","owner_phone":"+351 900","motive":"surgery","veterinarian":"Dr. Lee","observations":"bites\tsometimes","photo":"photos/rex.jpg","beacon":"1de4b189115e45f6b44e509352269977"}
        {"animal":"tom","name":"Tom","gender":null,"birth_date":null,"weight_kg":4,"species":"cat","breed":null,"coat":null,"owner_name":null,"owner_address":null,"owner_phone":null,"motive":null,"veterinarian":null,"observations":null,"photo":null,"beacon":"b-2"}
        {"animal":"rex","exit_weight_kg":30.9,"veterinarian":"Dr. Lee","observations":null}
        {"animal":"rex","room":"ward 2","beacon":"1de4b189115e45f6b44e509352269977","at":"2026-11-22T18:00:00.000001Z"}
        {"animal":"rex","last_room":"ward 2","last_seen":"2026-11-22T18:00:00.000002Z"}
        {"animal":"rex"}
        {"device":"desk-2","driver":"kasa","name":"Desk 2","config":"{\"host\":\"10.0.0.9\",\"outlet\":2}","hardware_id":"50C7BF/2","outlet_of":{"strip":"desk","strip_name":"Desk","number":2,"strip_hardware_id":"50C7BF"}}
        {"command":"switch","target":"nope","code":"unknown_device","message":"no device \"nope\" is registered","command_id":"c-1"}
        {"command":"admit_animal","target":null,"code":"missing_field","message":"m","command_id":null}
        """#

    @Test func everySampleEventsBodyIsTheSameAsTextAndAsValue() {
        let lines = Self.golden.split(separator: "\n").map(String.init)
        #expect(lines.count == sampleEvents.count)
        for (event, line) in zip(sampleEvents, lines) {
            var text = JSONText()
            event.write(to: &text)
            #expect(String(decoding: text.bytes, as: UTF8.self) == line)
            #expect(event.jsonBody().serialized() == line)
        }
    }
}
