/// Whether an animal is in the hub's care now.
public enum AnimalStatus: String, Sendable, Equatable, Codable {
    /// In care since its last admission, or gone since its last discharge.
    case admitted, discharged
}

/// One animal as the read model knows it: its latest admission, whereabouts and vitals.
public struct AnimalRecord: Sendable, Equatable, Codable {
    /// The animal id.
    public var id: String
    /// The latest admission.
    public var admission: Admission
    /// Admitted or discharged.
    public var status: AnimalStatus
    /// When it was last admitted, µs since the Unix epoch.
    public var admittedAt: Int64
    /// When it was last discharged, µs since the Unix epoch; nil while admitted.
    public var dischargedAt: Int64?
    /// The last discharge's details; nil while admitted.
    public var discharge: AnimalDischarged?
    /// The beacon's identity as the bridges report it (`BeaconId.key`).
    public var beacon: String
    /// The room its beacon was last heard in; nil before the first sighting.
    public var lastRoom: String?
    /// When its beacon was last heard, µs since the Unix epoch.
    public var lastSeenAt: Int64?
    /// The latest heart rate, in beats per minute.
    public var heartRate: ReadingValue?
    /// The latest temperature, in °C.
    public var temperature: ReadingValue?
    /// How many times the animal was admitted.
    public var admissions: Int
    /// The stays before the current one, the latest first: each admission with its discharge and
    /// its last vitals, kept when the animal is admitted again.
    public var earlierStays: [AnimalStay] = []

    /// This stay, as it would be kept among ``earlierStays`` after a re-admission.
    public var currentStay: AnimalStay {
        AnimalStay(
            admission: admission, admittedAt: admittedAt, dischargedAt: dischargedAt, discharge: discharge,
            heartRate: heartRate, temperature: temperature)
    }

    /// When the stay before this one ended (nil: none, or it was never discharged).
    public var previousStayEnd: Int64? { earlierStays.first?.dischargedAt }

    /// True while in care.
    public var isAdmitted: Bool { status == .admitted }

    /// Returns the beacon that is released.
    mutating func markDischarged(_ e: AnimalDischarged, at time: Int64) -> String {
        status = .discharged
        dischargedAt = time
        discharge = e
        return beacon
    }

    /// Since when the beacon has been silent (nil: heard recently, or never unseen).
    public var unseenSince: Int64?
    /// The owner contact data was erased (its key deleted).
    public var ownerErased: Bool = false

    /// Keeps a vital sign as the latest unless one measured later is held: a reading measured
    /// before the one shown (logged late) goes to the history only.
    mutating func take(_ e: ReadingRecorded) {
        let reading = ReadingValue(value: e.value, measuredAt: e.measuredAt)
        switch e.quantity {
        case .heartRate: heartRate = ReadingValue.latest(heartRate, reading)
        case .temperature: temperature = ReadingValue.latest(temperature, reading)
        default: return
        }
    }

    mutating func markSeen(room: String, at time: Int64) {
        lastRoom = room
        lastSeenAt = time
        unseenSince = nil
    }
}

/// One stay of an animal in care: its admission, its discharge (nil while it lasts) and the last
/// vitals measured during it.
public struct AnimalStay: Sendable, Equatable, Codable {
    /// The admission as recorded (sealed owner data included).
    public var admission: AnimalAdmitted
    /// When it was admitted, µs since the Unix epoch.
    public var admittedAt: Int64
    /// When it was discharged, µs since the Unix epoch; nil while in care.
    public var dischargedAt: Int64?
    /// The discharge's details; nil while in care.
    public var discharge: AnimalDischarged?
    /// The last heart rate of the stay, in beats per minute.
    public var heartRate: ReadingValue?
    /// The last temperature of the stay, in °C.
    public var temperature: ReadingValue?
}

/// Per animal: admission, status, whereabouts, latest vitals; plus a beacon index.
public struct AnimalsModel: Sendable, Equatable, Codable {
    /// Every animal ever admitted, by id (discharged ones included).
    public private(set) var byId: [String: AnimalRecord] = [:]
    /// Beacon identity (`BeaconId.key`, as the bridges report it) -> currently admitted animal id.
    public private(set) var beaconIndex: [String: String] = [:]

    /// No animals.
    public init() {}

    enum CodingKeys: String, CodingKey { case byId, beaconIndex }

    /// A snapshot written before beacon ids were canonical is re-keyed (the log says the same).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        byId = try c.decode([String: AnimalRecord].self, forKey: .byId).mapValues { record in
            var record = record
            record.beacon = BeaconId.key(record.beacon)
            return record
        }
        let index = try c.decode([String: String].self, forKey: .beaconIndex)
        beaconIndex = Dictionary(index.map { (BeaconId.key($0.key), $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// The animal with this id, discharged ones included; nil when never admitted.
    public subscript(id: String) -> AnimalRecord? { byId[id] }

    /// The admitted animal wearing `beacon`, given in any form `BeaconId` reads.
    public func animal(withBeacon beacon: String) -> AnimalRecord? {
        guard let id = beaconIndex[BeaconId.key(beacon)] else { return nil }
        return byId[id]
    }

    /// The animals in care now, sorted by id.
    public var admitted: [AnimalRecord] { byId.values.filter(\.isAdmitted).sorted { $0.id < $1.id } }

    /// Folds one event into the model; events not about animals are ignored.
    public mutating func apply(_ event: HubEvent, context: EventContext) {
        switch event {
        case .animalAdmitted(let e):
            let previous = byId[e.animal]
            if let previous, previous.isAdmitted, beaconIndex[previous.beacon] == e.animal {
                beaconIndex[previous.beacon] = nil
            }
            let beacon = BeaconId.key(e.beacon)
            byId[e.animal] = AnimalRecord(
                id: e.animal, admission: e, status: .admitted, admittedAt: context.timestamp,
                dischargedAt: nil, discharge: nil, beacon: beacon, lastRoom: nil,
                lastSeenAt: nil, heartRate: nil, temperature: nil,
                admissions: (previous?.admissions ?? 0) + 1,
                earlierStays: previous.map { [$0.currentStay] + $0.earlierStays } ?? [])
            beaconIndex[beacon] = e.animal
        case .animalDischarged(let e):
            guard let beacon = byId[e.animal]?.markDischarged(e, at: context.timestamp) else { return }
            if beaconIndex[beacon] == e.animal { beaconIndex[beacon] = nil }
        case .animalSighted(let e):
            byId[e.animal]?.markSeen(room: e.room, at: e.at)
        case .ownerDataErased(let e):
            byId[e.animal]?.ownerErased = true
        case .animalUnseen(let e):
            byId[e.animal]?.unseenSince = e.lastSeen
            if byId[e.animal]?.lastSeenAt.map({ $0 < e.lastSeen }) ?? true { byId[e.animal]?.lastSeenAt = e.lastSeen }
        case .readingRecorded(let e):
            guard case .animal(let id) = e.subject else { return }
            byId[id]?.take(e)
        default:
            return
        }
    }
}
