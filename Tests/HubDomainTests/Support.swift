@testable import HubDomain

let t0: Int64 = 1_795_370_400_000_000  // 2026-11-22T18:00:00Z

/// One sample of every event type (with optionals set and unset where they exist).
let sampleEvents: [HubEvent] = [
    .deviceRegistered(
        DeviceRegistered(
            device: "plug-1", driver: "tcp-powerplug", name: "Lawn pump",
            config: #"{"host":"10.0.0.5","port":230}"#, hardwareId: "AA:BB")),
    .deviceRegistered(DeviceRegistered(device: "plug_2", driver: "kasa", name: "Lámpara ☃", config: "{}", hardwareId: nil)),
    .deviceRenamed(DeviceRenamed(device: "plug-1", name: "Pump \"north\"\n")),
    .deviceRemoved(DeviceRemoved(device: "plug-1")),
    .switchRequested(SwitchRequested(device: "plug-1", state: .on)),
    .switchToggled(SwitchToggled(device: "plug-1", state: .off, cause: .deviceReport)),
    .switchToggled(SwitchToggled(device: "plug-1", state: .on, cause: .schedule)),
    .switchFailed(SwitchFailed(device: "plug-1", state: .on, reason: "timeout after 5 s")),
    .modeChanged(ModeChanged(device: "plug-1", mode: .manual)),
    .activationChanged(
        ActivationChanged(
            device: "plug-1", change: .added, name: "water the lawn", start: 1_795_370_400,
            lengthMinutes: 30, periodMinutes: 1440)),
    .activationChanged(
        ActivationChanged(
            device: "plug-1", change: .removed, name: "x", start: Int64(UInt32.max),
            lengthMinutes: 65535, periodMinutes: 0)),
    .activationChanged(
        ActivationChanged(
            device: "plug-1", change: .updated, name: "evening", start: 1_795_370_400,
            lengthMinutes: 45, periodMinutes: 0,
            daily: DailyRepeat(minuteOfDay: 18 * 60, weekdays: 0b0010101, timeZone: "Europe/Lisbon"))),
    .availabilityChanged(AvailabilityChanged(device: "plug-1", available: false, reason: "connection refused")),
    .groupDefined(GroupDefined(group: "kitchen", name: "Kitchen", members: ["plug-1", "plug_2"])),
    .groupRemoved(GroupRemoved(group: "kitchen")),
    .sceneDefined(
        SceneDefined(
            scene: "movie", name: "Movie night",
            targets: [
                DeviceTarget(device: "plug-1", state: .off),
                DeviceTarget(device: "plug_2", state: .on)
            ])),
    .sceneRemoved(SceneRemoved(scene: "movie")),
    .multiSwitchRequested(MultiSwitchRequested(origin: "group/kitchen", targets: [DeviceTarget(device: "plug-1", state: .on)])),
    .multiSwitchRequested(MultiSwitchRequested(origin: "all", targets: [])),
    .readingRecorded(ReadingRecorded(subject: .device("plug-1"), quantity: .power, value: 1234.5678901234, measuredAt: t0 + 123_456)),
    .readingRecorded(ReadingRecorded(subject: .animal("rex"), quantity: .heartRate, value: 88, measuredAt: t0)),
    .readingRecorded(ReadingRecorded(subject: .animal("rex"), quantity: .temperature, value: -0.1, measuredAt: -1)),
    .readingRecorded(ReadingRecorded(subject: .device("m"), quantity: .energy, value: 1e-7, measuredAt: t0)),
    .readingRecorded(ReadingRecorded(subject: .device("m"), quantity: .voltage, value: 230.1, measuredAt: t0)),
    .readingRecorded(ReadingRecorded(subject: .device("m"), quantity: .current, value: 1.0e21, measuredAt: t0)),
    .energyCounterReset(EnergyCounterReset(device: "plug-1", previousWh: 5021.25, newWh: 0.5)),
    .activationsDiverged(
        ActivationsDiverged(
            device: "plug-1", expected: [Activation(name: "lawn", start: 1_795_370_400, lengthMinutes: 30, periodMinutes: 1440)],
            found: [], resolution: .restore)),
    .activationsDiverged(
        ActivationsDiverged(
            device: "plug-1", expected: [],
            found: [
                Activation(name: "a", start: 0, lengthMinutes: 1, periodMinutes: 0),
                Activation(name: "b", start: Int64(UInt32.max), lengthMinutes: 65535, periodMinutes: 65535)
            ],
            resolution: .report)),
    .animalAdmitted(
        AnimalAdmitted(
            animal: "rex", name: "Rex", gender: "male", birthDate: "2020-02-29", weightKg: 31.4,
            species: "dog", breed: "mixed", coat: "brown", ownerName: "Ana",
            ownerAddress: "Rua 1, Porto", ownerPhone: "+351 900", motive: "surgery",
            veterinarian: "Dr. Lee", observations: "bites\tsometimes", photo: "photos/rex.jpg",
            beacon: "1de4b189115e45f6b44e509352269977")),
    .animalAdmitted(AnimalAdmitted(animal: "tom", name: "Tom", weightKg: 4, species: "cat", beacon: "b-2")),
    .animalDischarged(AnimalDischarged(animal: "rex", exitWeightKg: 30.9, veterinarian: "Dr. Lee", observations: nil)),
    .animalSighted(AnimalSighted(animal: "rex", room: "ward 2", beacon: "1de4b189115e45f6b44e509352269977", at: t0 + 1)),
    .animalUnseen(AnimalUnseen(animal: "rex", lastRoom: "ward 2", lastSeen: t0 + 2)),
    .ownerDataErased(OwnerDataErased(animal: "rex")),
    .deviceRegistered(
        DeviceRegistered(
            device: "desk-2", driver: "kasa", name: "Desk 2", config: #"{"host":"10.0.0.9","outlet":2}"#, hardwareId: "50C7BF/2",
            outlet: OutletOf(strip: "desk", stripName: "Desk", number: 2, stripHardwareId: "50C7BF"))),
    .commandRejected(
        CommandRejected(
            command: "switch", target: "nope", code: "unknown_device",
            message: "no device \"nope\" is registered", commandId: "c-1")),
    .commandRejected(CommandRejected(command: "admit_animal", target: nil, code: "missing_field", message: "m", commandId: nil))
]

func ctx(_ seq: UInt64, _ ts: Int64 = t0, actor: String = "tester", commandId: String? = nil) -> EventContext {
    EventContext(sequence: seq, timestamp: ts, actor: actor, commandId: commandId)
}

/// Folds events into a fresh state.
func fold(_ events: [HubEvent], into start: HubState = HubState()) -> HubState {
    var s = start
    for e in events { s.apply(e, context: ctx(s.lastSequence + 1)) }
    return s
}

/// Runs a command, requires acceptance, folds the events; returns the events.
@discardableResult
func run(_ command: HubCommand, _ state: inout HubState, at ts: Int64 = t0, commandId: String? = nil) -> [HubEvent] {
    switch decide(command, state: state, now: ts) {
    case .accepted(let events):
        for e in events { state.apply(e, context: ctx(state.lastSequence + 1, ts, commandId: commandId)) }
        return events
    case .rejected(let r):
        fatalError("unexpected rejection \(r)")
    }
}

func code(_ command: HubCommand, _ state: HubState, now: Int64 = t0) -> String? {
    decide(command, state: state, now: now).rejection?.code
}

func register(_ id: String, _ state: inout HubState) {
    run(.registerDevice(id: id, driver: "tcp-powerplug", name: "Device \(id)", config: "{}", hardwareId: nil), &state)
}

func admission(_ id: String, beacon: String = "BEACON-1", weight: Double = 12) -> Admission {
    Admission(animal: id, name: "Animal \(id)", weightKg: weight, species: "dog", beacon: beacon)
}
