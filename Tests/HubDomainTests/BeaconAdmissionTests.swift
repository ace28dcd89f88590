import Testing

@testable import HubDomain

/// An animal admitted with any form of its collar's id is found under the identity the beacon
/// bridge derives (Plugins/BeaconBridge `BeaconParser`) from what ESPresense, OpenMQTTGateway and
/// Theengs publish.
@Suite struct BeaconAdmissionTests {
    static let uuid = "1de4b189115e45f6b44e509352269977"

    /// (what a person or a bridge gives at admission, the identity the bridge reports for that collar)
    static let forms: [(given: String, bridge: String)] = [
        // ESPresense `id` for an iBeacon, as published (topic espresense/devices/<id>/<room>)
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0", uuid),
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-1-2", uuid + "-1-2"),
        ("IBEACON:1DE4B189115E45F6B44E509352269977-0-0", uuid),
        // OpenMQTTGateway / Theengs `uuid` (+ `major`, `minor`)
        ("1de4b189115e45f6b44e509352269977", uuid),
        ("1DE4B189115E45F6B44E509352269977", uuid),
        // the uuid as printed on a collar or by a phone app
        ("1de4b189-115e-45f6-b44e-509352269977", uuid),
        (" 1DE4B189-115E-45F6-B44E-509352269977 ", uuid),
        ("1de4b189-115e-45f6-b44e-509352269977-0-0", uuid),
        ("1de4b189115e45f6b44e509352269977-7-65535", uuid + "-7-65535"),
        // uuid/major/minor, as the console's admission form suggests
        ("1de4b189115e45f6b44e509352269977/0/0", uuid),
        ("1DE4B189-115E-45F6-B44E-509352269977/1/2", uuid + "-1-2"),
        ("1de4b189115e45f6b44e509352269977/7/65535", uuid + "-7-65535"),
        // MACs: OpenMQTTGateway / Theengs `id`, ESPresense (older firmware) `id`
        ("60:87:57:4C:9B:C2", "6087574c9bc2"),
        ("6087574C9BC2", "6087574c9bc2"),
        ("60-87-57-4c-9b-c2", "6087574c9bc2"),
        // other ESPresense ids and configured ids (`beacon_ids`) are kept, lowercased
        ("apple:1006:10-12", "apple:1006:10-12"),
        ("Collar-7", "collar-7")
    ]

    @Test(arguments: forms) func admissionFindsWhatTheBridgeReports(given: String, bridge: String) {
        var s = HubState()
        let events = run(.admitAnimal(admission("rex", beacon: given)), &s)
        guard case .animalAdmitted(let a) = events.first else { Issue.record("no admission"); return }
        #expect(a.beacon == bridge, "\(given)")
        #expect(s.animals.beaconIndex[bridge] == "rex", "\(given)")
        #expect(s.animals.animal(withBeacon: bridge)?.id == "rex", "\(given)")
        // The bridge's sighting is of rex's beacon, and so is one given in the admission's form.
        #expect(code(.sightAnimal(id: "rex", room: "ward", beacon: bridge, at: t0), s) == nil)
        #expect(code(.sightAnimal(id: "rex", room: "ward", beacon: given, at: t0), s) == nil)
    }

    @Test func oneCollarInTwoFormsIsOneBeacon() {
        var s = HubState()
        run(.admitAnimal(admission("rex", beacon: "iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0")), &s)
        #expect(code(.admitAnimal(admission("tom", beacon: Self.uuid)), s) == "beacon_in_use")
        #expect(code(.admitAnimal(admission("tom", beacon: "1DE4B189-115E-45F6-B44E-509352269977")), s) == "beacon_in_use")
        #expect(code(.admitAnimal(admission("tom", beacon: "iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-1")), s) == nil)
    }

    /// Near misses are refused with the form to use, and change nothing.
    static let refused: [(given: String, says: String)] = [
        ("iBeacon:1de4b189-115e-45f6-b44e-50935226997-0-0", "iBeacon:<uuid>-<major>-<minor>"),  // 31 hex digits
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977", "iBeacon:<uuid>-<major>-<minor>"),  // no major/minor
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-70000-0", "0 to 65535"),
        ("1de4b189-115e-45f6-b44e-50935226997", "32 hex digits"),
        ("1de4b189115e45f6b44e509352269977a", "32 hex digits"),
        ("1de4b189-115e-45f6-b44e-509352269977-1", "32 hex digits"),
        ("60:87:57:4C:9B", "six two-digit hex groups"),
        ("collar 7", "space"),
        ("1de4b189115e45f6b44e509352269977/1", "<uuid>/<major>/<minor>"),
        ("1de4b189115e45f6b44e509352269977/1/70000", "0 to 65535"),
        ("1de4b189115e45f6b44e50935226997/1/2", "<uuid>/<major>/<minor>"),
        ("collar/7", "<uuid>/<major>/<minor>")
    ]

    @Test(arguments: refused) func nearMissesAreRefused(given: String, says: String) {
        let s = HubState()
        guard let rejection = decide(.admitAnimal(admission("rex", beacon: given)), state: s, now: t0).rejection else {
            Issue.record("\(given) was accepted"); return
        }
        #expect(rejection.code == "invalid_beacon", "\(given)")
        #expect(rejection.message.contains(says), "\(given): \(rejection.message)")
        #expect(rejection.message.contains("rex"), "\(rejection.message)")
        #expect(
            rejection.message.contains("1de4b189115e45f6b44e509352269977") || rejection.message.contains("6087574c9bc2"),
            "the message shows the canonical form: \(rejection.message)")
        // ... and every form accepted.
        for form in [
            "a uuid (32 hex digits", "<uuid>/<major>/<minor>", "iBeacon:<uuid>-<major>-<minor>", "a MAC", "request/beacons/unknown"
        ] {
            #expect(rejection.message.contains(form), "\(given): \(rejection.message)")
        }
    }

    /// An admission logged before beacon ids were made canonical is indexed under the bridge's identity.
    @Test func anOlderAdmissionIsIndexedUnderTheBridgesIdentity() {
        var s = HubState()
        let old = AnimalAdmitted(
            animal: "rex", name: "Rex", weightKg: 30, species: "dog",
            beacon: "ibeacon:1de4b189-115e-45f6-b44e-509352269977-0-0")
        s.apply(.animalAdmitted(old), context: ctx(1, t0))
        #expect(s.animals.beaconIndex[Self.uuid] == "rex")
        #expect(s.animals.animal(withBeacon: "iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0")?.id == "rex")
        s.apply(
            .animalDischarged(AnimalDischarged(animal: "rex", exitWeightKg: 29, veterinarian: nil, observations: nil)),
            context: ctx(2, t0 + 1))
        #expect(s.animals.beaconIndex.isEmpty)
    }
}

/// `BeaconId.canonical`, the pure rule, as a table.
@Suite struct BeaconIdTests {
    static let uuid = "1de4b189115e45f6b44e509352269977"

    static let accepted: [(String, String)] = [
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0", uuid),
        ("ibeacon:1de4b189115e45f6b44e509352269977-0-0", uuid),
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-10-12", uuid + "-10-12"),
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-65535-0", uuid + "-65535-0"),
        (uuid, uuid),
        ("1DE4B189-115E-45F6-B44E-509352269977", uuid),
        ("\t1de4b189-115e-45f6-b44e-509352269977-0-0 ", uuid),
        ("1de4b189115e45f6b44e509352269977-0-3", uuid + "-0-3"),
        ("60:87:57:4C:9B:C2", "6087574c9bc2"),
        ("60-87-57-4C-9B-C2", "6087574c9bc2"),
        ("6087574C9BC2", "6087574c9bc2"),
        ("244b03d72780", "244b03d72780"),
        ("apple:1006:10-12", "apple:1006:10-12"),
        ("msft:cdp:0109", "msft:cdp:0109"),
        ("BEACON-1", "beacon-1"),
        ("b1", "b1"),
        ("1de4b189-aa", "1de4b189-aa")
    ]

    @Test(arguments: accepted) func canonical(given: String, identity: String) throws {
        #expect(try BeaconId.canonical(given) == identity)
        #expect(BeaconId.key(given) == identity)
        #expect(try BeaconId.canonical(identity) == identity, "the identity is its own canonical form")
    }

    static let refused: [(String, String)] = [
        ("", "is empty"),
        ("iBeacon:", "iBeacon:<uuid>-<major>-<minor>"),
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-0", "iBeacon:<uuid>-<major>-<minor>"),
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977-x-0", "0 to 65535"),
        ("iBeacon:1de4b189-115e-45f6-b44e-509352269977--1-0", "iBeacon:<uuid>-<major>-<minor>"),
        ("iBeacon:zde4b189-115e-45f6-b44e-509352269977-0-0", "iBeacon:<uuid>-<major>-<minor>"),
        ("1de4b189-115e-45f6-b44e-509352269977-0-65536", "0 to 65535"),
        ("1de4b189115e45f6b44e50935226997", "32 hex digits"),
        ("1de4b189-115e45f6-b44e-509352269977", "32 hex digits"),
        ("60:87:57:4C:9B:C2:00", "six two-digit hex groups"),
        ("a b", "space"),
        ("a\u{1}b", "control"),
        (String(repeating: "x", count: 129), "longer than 128")
    ]

    @Test(arguments: refused) func refusedWithTheFormToUse(given: String, says: String) {
        do {
            let id = try BeaconId.canonical(given)
            Issue.record("\(given) gave \(id)")
        } catch {
            #expect(error.reason.contains(says), "\(given): \(error.reason)")
        }
    }
}
