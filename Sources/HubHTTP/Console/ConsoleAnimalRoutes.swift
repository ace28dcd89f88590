import HubDomain
import HubEngine
import Hummingbird

extension ConsoleRoutes {
    func animalsPage(_ request: Request) async -> Response {
        let animals = await hub.read { state in
            state.animals.byId.values.sorted {
                ($0.isAdmitted ? 0 : 1, $0.admission.name, $0.id) < ($1.isAdmitted ? 0 : 1, $1.admission.name, $1.id)
            }
        }
        let presence = await routes.bridges.presence
        let beacon = request.uri.queryParameters.get("beacon")
        return AnimalsPage(animals: animals, presence: presence, beacon: beacon).page.response
    }

    func animalPage(_ id: String, _ request: Request) async -> Response {
        guard let animal = await hub.animal(id) else { return ConsoleResponse.notFound(.animals, "No animal \"\(id)\" was ever admitted.") }
        let live = await routes.bridges.presence[id]
        let now = currentMicros()
        let range = request.uri.queryParameters.get("range").flatMap(VitalsRange.init(rawValue:)) ?? .day
        // A new patient's chart starts at its admission (on the hour), so its few points are not
        // squeezed against the right edge (half an hour before it; at least an hour is shown).
        var from = now - range.span
        let admitted = animal.admittedAt
        if admitted > from {
            from = Swift.min(admitted - 1_800_000_000, now - 3_600_000_000)
        }
        // The charts show this stay only (triage vitals before the admission included), never the
        // vitals of an earlier stay.
        if let previousEnd = animal.previousStayEnd, previousEnd >= from { from = previousEnd + 1 }
        let after = animal.previousStayEnd
        async let heart = vitals(id, .heartRate, range.resolution, from: from, to: now, after: after)
        async let temperature = vitals(id, .temperature, range.resolution, from: from, to: now, after: after)
        // A tenth of the range after now, so the newest measurement is not drawn on the frame.
        return AnimalPage(
            animal: animal, owner: owner(animal), live: live, heartRate: await heart, temperature: await temperature,
            range: range, from: from, to: now + (now - from) / 10
        ).page.response
    }

    /// The owner's contact data read with the animal's key; nil when there is none or it was erased.
    func owner(_ animal: AnimalRecord) -> OwnerDataVault.Owner? {
        animal.ownerErased ? nil : hub.vault.owner(of: animal.admission)
    }

    /// One vital sign's buckets that hold a measurement, each drawn at its bucket's middle; with
    /// `after` (the end of an earlier stay), only buckets that begin after it, so that no bucket
    /// shared with the earlier stay is drawn as this one's.
    func vitals(
        _ id: String, _ quantity: Quantity, _ resolution: HistoryResolution, from: Int64, to: Int64, after: Int64? = nil
    ) async -> [SVGChart.Band] {
        guard
            case .buckets(let buckets)? = try? await hub.history(
                HistoryQuery(
                    subject: .animal(id), quantity: quantity, from: from,
                    to: to, resolution: resolution))
        else { return [] }
        return buckets.filter { $0.count > 0 && $0.start > (after ?? Int64.min) }.map {
            SVGChart.Band(start: $0.start + resolution.width / 2, min: $0.min, mean: $0.last, max: $0.max)
        }
    }
}
