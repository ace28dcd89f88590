import Foundation
import Testing

@testable import HubDomain

@Suite struct EventTypeAndStreamKeyTests {
    @Test func everyEventHasItsTypeFromTheOneTable() {
        #expect(Set(sampleEvents.map(\.type)) == Set(EventType.allCases))
        for e in sampleEvents {
            #expect(e.typeName == e.type.rawValue)
            #expect(EventType(rawValue: e.typeName) == e.type)
            #expect(e.schemaVersion == e.type.currentSchemaVersion)
        }
        #expect(HubEvent.allTypeNames == EventType.allCases.map(\.rawValue))
        #expect(HubEvent.currentSchemaVersion == 2)
        #expect(HubEvent.currentSchemaVersion(of: "ActivationChanged") == 2)
        #expect(HubEvent.currentSchemaVersion(of: "NoSuchEvent") == 1)
    }

    @Test func theEventCatalogueDocumentsEveryType() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/events.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        for type in EventType.allCases {
            #expect(text.contains("**`\(type.rawValue)`**"), "docs/events.md does not describe \(type.rawValue)")
        }
    }

    @Test func streamNamesAreBuiltAndReadInOnePlace() {
        let cases: [(StreamKey, String)] = [
            (.device("lamp"), "device/lamp"), (.animal("rex"), "animal/rex"), (.group("kitchen"), "group/kitchen"),
            (.scene("movie"), "scene/movie"), (.hub, "hub"), (.device("a/b"), "device/a/b")
        ]
        for (key, stream) in cases {
            #expect(key.stream == stream)
            #expect(key.name == stream && key.description == stream)
            #expect(StreamKey(stream: stream) == key, "\(stream)")
        }
        for bad in ["", "device", "device/", "lamp", "devices/lamp", "/lamp", "Hub", "hub/x", "Device/lamp"] {
            #expect(StreamKey(stream: bad) == nil, "\(bad)")
        }
        #expect(StreamKey.device("p").deviceId == "p" && StreamKey.device("p").animalId == nil)
        #expect(StreamKey.animal("r").animalId == "r" && StreamKey.group("g").groupId == "g" && StreamKey.scene("s").sceneId == "s")
        #expect(StreamKey.hub.id == nil && StreamKey.hub.kind == nil)
        #expect(StreamKey(.scene, "s") == .scene("s") && StreamKey.scene("s").kind == .scene)
        for e in sampleEvents { #expect(StreamKey(stream: e.stream) == e.streamKey) }
    }
}
