import BeaconBridge
import HubDomain
import Testing

/// End to end without a broker: what each bridge publishes for one collar, parsed by the beacon
/// bridge, finds the animal admitted with any form of the collar's id.
@Suite struct BeaconIdentityTests {
    /// Messages as ESPresense, OpenMQTTGateway and Theengs publish them (docs: reference formats).
    static let messages: [(topic: String, payload: String)] = [
        (
            "espresense/devices/iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0/kitchen",
            #"{"mac":"67518126293a","id":"iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0","rssi@1m":-65,"rssi":-84.77,"rxAdj":0,"rssiVar":9.56,"distance":2.49,"var":0.16,"int":626}"#
        ),
        (
            "home/gw1/BTtoMQTT/6087574C9BC2",
            #"{"id":"60:87:57:4C:9B:C2","mac_type":1,"rssi":-78,"distance":7.85288,"brand":"GENERIC","model":"iBeacon","model_id":"IBEACON","mfid":"4c00","uuid":"1de4b189115e45f6b44e509352269977","major":0,"minor":0,"txpower":-66}"#
        ),
        (
            "home/TheengsGateway/BTtoMQTT/6087574C9BC2",
            #"{"id":"60:87:57:4C:9B:C2","rssi":-70,"brand":"GENERIC","model":"iBeacon","model_id":"IBEACON","mfid":"4c00","uuid":"1DE4B189-115E-45F6-B44E-509352269977","major":0,"minor":0,"txpower":-59}"#
        )
    ]

    static let admittedAs = [
        "iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0",  // as ESPresense shows it
        "1de4b189115e45f6b44e509352269977",  // as OpenMQTTGateway / Theengs show it
        "1DE4B189-115E-45F6-B44E-509352269977"  // as printed on a collar
    ]

    @Test(arguments: admittedAs) func everyBridgeFindsTheAnimal(admittedAs beacon: String) throws {
        var state = HubState()
        let events = decide(
            .admitAnimal(Admission(animal: "rex", name: "Rex", weightKg: 30, species: "dog", beacon: beacon)),
            state: state, now: 0
        ).events
        try #require(events.count == 1)
        state.apply(events[0], context: EventContext(sequence: 1, timestamp: 0, actor: "test", commandId: nil))
        let parser = BeaconParser()
        for (topic, payload) in Self.messages {
            let observation = try parser.parse(topic: topic, payload: Array(payload.utf8)).get()
            #expect(state.animals.animal(withBeacon: observation.beacon)?.id == "rex", "\(topic): \(observation.beacon)")
            #expect(state.animals.beaconIndex[observation.beacon] == "rex", "\(topic): the hub's lookup is by the exact identity")
        }
    }
}
