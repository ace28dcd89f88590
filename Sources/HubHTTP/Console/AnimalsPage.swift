import HubDomain
import HubEngine

/// `GET /animals`: the patients, admitted first, with room, last seen and present; and the
/// admission form with every field of the seed clinic app, the photo included.
struct AnimalsPage {
    let animals: [AnimalRecord]
    /// Where each animal's beacon is heard now (the bridges' live presence; not logged).
    let presence: [String: (room: String, at: Int64)]
    /// A beacon to admit with (from Discovered's "admit" on an unknown beacon).
    let beacon: String?

    var page: ConsolePage {
        let admitted = animals.filter(\.isAdmitted), discharged = animals.filter { !$0.isAdmitted }
        return ConsolePage(
            title: "Animals", section: .animals, live: ["animal/"],
            body: """
                <h2>Admitted (\(admitted.count))</h2>
                \(table(admitted))
                <h2>Discharged (\(discharged.count))</h2>
                \(table(discharged))
                <h2 id="admit">Admit an animal</h2>
                \(Self.admissionForm(beacon: beacon))
                """)
    }

    func table(_ list: [AnimalRecord]) -> HTML {
        guard !list.isEmpty else { return "<p class=\"muted\">None.</p>" }
        let rows = list.map { a -> HTML in
            let live = presence[a.id]
            let room = live?.room ?? a.lastRoom
            let seen = max(live?.at ?? 0, a.lastSeenAt ?? 0)
            return """
                <tr data-animal="\(a.id)"><td><a href="/animals/\(URLText.component(a.id))">\(a.admission.name)</a> <span class="muted">\(a.id)</span></td>\
                <td>\(a.admission.species)</td><td>\(room ?? "–")</td><td>\(ConsoleFormat.time(seen > 0 ? seen : nil))</td>\
                <td>\(Self.presentText(a, live: live != nil))</td><td>\(ConsoleFormat.time(a.admittedAt))</td></tr>
                """
        }
        return """
            <div class="scroll"><table><thead><tr><th>Name</th><th>Species</th><th>Room</th><th>Last seen</th><th>Present</th>\
            <th>Admitted</th></tr></thead><tbody>\(rows)</tbody></table></div>
            """
    }

    static func presentText(_ a: AnimalRecord, live: Bool) -> String {
        guard a.isAdmitted else { return "discharged" }
        if live || (a.lastSeenAt != nil && a.unseenSince == nil) { return "yes" }
        if let since = a.unseenSince { return "no (unseen since \(ConsoleFormat.time(since)))" }
        return "not seen yet"
    }

    /// The admission form: the command object is built from the fields by the page's script, the
    /// photo uploaded first (`POST /console/photo`) and referenced by its name.
    static func admissionForm(beacon: String?) -> HTML {
        func field(_ name: String, _ label: String, _ extra: HTML = .empty, wide: Bool = false) -> HTML {
            "<label class=\"\(wide ? "wide" : "")\">\(label)<input name=\"\(name)\" \(extra)></label>"
        }
        return """
            <form class="stack card" data-after="reload" data-command="\(ConsoleFormat.command([("command", "admit_animal")]))">
            \(field("id", "Id (letters, digits, - and _)", "required pattern=\"[A-Za-z0-9_-]{1,64}\""))
            \(field("name", "Name", "required"))
            \(field("species", "Species", "required list=\"species\""))
            <datalist id="species"><option value="dog"><option value="cat"><option value="horse"><option value="cow"><option value="bird"></datalist>
            \(field("breed", "Breed"))
            <label>Gender<select name="gender"><option value="">–</option><option value="male">male</option><option value="female">female</option></select></label>
            \(field("birth_date", "Birth date", "type=\"date\""))
            \(field("weight_kg", "Weight (kg)", "required data-type=\"number\" inputmode=\"decimal\""))
            \(field("coat", "Coat"))
            \(field("beacon", "Beacon", "required value=\"\(beacon ?? "")\" placeholder=\"iBeacon:uuid-major-minor, a uuid, or a MAC\""))
            \(field("owner_name", "Owner's name"))
            \(field("owner_phone", "Owner's phone", "type=\"tel\""))
            \(field("owner_address", "Owner's address", wide: true))
            \(field("motive", "Reason for admission", wide: true))
            \(field("veterinarian", "Veterinarian"))
            <label class="wide">Observations<textarea name="observations"></textarea></label>
            <label class="wide">Photo (JPEG, PNG, WebP or GIF, at most \(PhotoStore.maxBytes / 1_048_576) MiB)<input type="file" name="photo" accept="image/jpeg,image/png,image/webp,image/gif" capture="environment"></label>
            <div class="wide"><button type="submit" class="primary">Admit</button></div>
            </form>
            """
    }
}

/// `GET /animals/{id}`: one patient: admission, photo, owner contact data (only while unsealed),
/// whereabouts, vitals charts and entry, discharge.
struct AnimalPage {
    let animal: AnimalRecord
    /// The owner contact data as it reads with this hub's key; nil when none was recorded or it was erased.
    let owner: OwnerDataVault.Owner?
    let live: (room: String, at: Int64)?
    let heartRate: [SVGChart.Band]
    let temperature: [SVGChart.Band]
    /// The charts' range: `24h` (default), `7d` or `30d`.
    let range: VitalsRange
    let from: Int64
    let to: Int64

    var page: ConsolePage {
        let a = animal.admission
        let ranges = VitalsRange.allCases.map { r -> HTML in
            r == range
                ? "<a aria-current=\"page\" href=\"?range=\(r.rawValue)\">\(r.title)</a>" as HTML
                : "<a href=\"?range=\(r.rawValue)\">\(r.title)</a>"
        }
        let photo: HTML =
            a.photo.map {
                PhotoStore.isValidName($0) ? "<img class=\"photo\" alt=\"Photo of \($0)\" src=\"/console/photos/\($0)\">" as HTML : .empty
            } ?? .empty
        return ConsolePage(
            title: a.name, section: .animals, live: ["animal/" + animal.id],
            body: """
                <div class="grid">
                <section class="card"><h3>Admission <span class="state \(animal.isAdmitted ? "on" : "off")">\(animal.status.rawValue)</span></h3>
                \(photo)
                <dl>
                \(Self.pairs([("Id", animal.id), ("Species", a.species), ("Breed", a.breed), ("Gender", a.gender), ("Birth date", a.birthDate),
                      ("Weight", ConsoleFormat.number(a.weightKg, decimals: 1) + " kg"), ("Coat", a.coat), ("Reason", a.motive),
                      ("Veterinarian", a.veterinarian), ("Observations", a.observations), ("Beacon", animal.beacon),
                      ("Admitted", ConsoleFormat.time(animal.admittedAt)), ("Admissions", String(animal.admissions))]))
                </dl></section>
                <section class="card"><h3>Whereabouts</h3><dl>
                \(Self.pairs([("Room", live?.room ?? animal.lastRoom), ("Last seen", ConsoleFormat.time(live?.at ?? animal.lastSeenAt)),
                      ("Present", AnimalsPage.presentText(animal, live: live != nil)),
                      ("Heart rate", animal.heartRate.map { ConsoleFormat.number($0.value, decimals: 0) + " bpm" }),
                      ("Temperature", animal.temperature.map { ConsoleFormat.number($0.value, decimals: 1) + " °C" })]))
                </dl></section>
                \(ownerCard)
                \(dischargeCard)
                </div>
                \(earlierStays)
                <h2>Vital signs</h2>
                \(animal.isAdmitted ? vitalsForm : HTML.empty)
                <p class="ranges">\(ranges)</p>
                <h3>Heart rate, \(range.title)</h3>
                \(SVGChart.band(heartRate, from: from, to: to, unit: "bpm", label: "heart rate", style: Self.vitalsStyle(decimals: 0)))
                <h3>Temperature, \(range.title)</h3>
                \(SVGChart.band(temperature, from: from, to: to, unit: "°C", label: "temperature", style: Self.vitalsStyle(decimals: 1)))
                """)
    }

    /// Vitals are measurements at moments: dots joined by lines, the axis fitted to them, each
    /// value written while there are few.
    static func vitalsStyle(decimals: Int) -> SVGChart.Style {
        SVGChart.Style(steps: false, includeZero: false, labelUpTo: 24, decimals: decimals)
    }

    /// Heart rate and temperature (one `record_reading` each), measured now or at a time picked.
    var vitalsForm: HTML {
        """
        <form id="vitals-form" class="inline card" data-after="reload" data-split="[&quot;heart_rate&quot;,&quot;temperature&quot;]" \
        data-command="\(ConsoleFormat.command([("command", "record_reading"), ("animal", .string(animal.id))]))">
        <label>Heart rate (bpm)<input name="heart_rate" data-type="number" inputmode="decimal" size="6"></label>
        <label>Temperature (°C)<input name="temperature" data-type="number" inputmode="decimal" size="6"></label>
        <label>Measured at (\(LocalTime.current.name); empty: now)<input name="measured_at" type="datetime-local" data-type="local"></label>
        <button type="submit" class="primary">Record</button>
        </form>
        """
    }

    var ownerCard: HTML {
        let erase = ConsoleFormat.command([("command", "erase_owner_data"), ("id", .string(animal.id))])
        let eraseButton: HTML = """
            <button class="danger" data-after="reload" data-confirm="Erase the owner's contact data for good?" data-command="\(erase)">Erase owner data</button>
            """
        let note: String
        switch owner {
        case .opened(let name, let address, let phone)?:
            return """
                <section class="card"><h3>Owner</h3><dl>
                \(Self.pairs([("Name", name), ("Phone", phone), ("Address", address)]))
                </dl>\(eraseButton)</section>
                """
        case .unreadable(let why)?:
            return "<section class=\"card\"><h3>Owner</h3><p class=\"error-box\">Cannot be shown: \(why).</p>\(eraseButton)</section>"
        case .keyMissing?:
            note = "Sealed, but its key is not in this hub's data directory (keys/animal-\(animal.id).key): it cannot be shown."
        case nil:
            note = animal.ownerErased ? "Erased: the key that sealed it was deleted." : "None recorded."
        }
        return "<section class=\"card\"><h3>Owner</h3><p class=\"muted\">\(note)</p></section>"
    }

    var dischargeCard: HTML {
        guard animal.isAdmitted else {
            let d = animal.discharge
            return """
                <section class="card"><h3>Discharged</h3><dl>
                \(Self.pairs([("When", ConsoleFormat.time(animal.dischargedAt)), ("Exit weight", d.map { ConsoleFormat.number($0.exitWeightKg, decimals: 1) + " kg" }),
                          ("Veterinarian", d?.veterinarian), ("Observations", d?.observations)]))
                </dl></section>
                """
        }
        return """
            <section class="card"><h3>Discharge</h3>
            <form class="stack" data-after="reload" data-confirm="Discharge \(animal.admission.name) now?" data-command="\(ConsoleFormat.command([("command", "discharge_animal"), ("id", .string(animal.id))]))">
            <label>Exit weight (kg)<input name="exit_weight_kg" required data-type="number" inputmode="decimal"></label>
            <label>Veterinarian<input name="veterinarian"></label>
            <label class="wide">Observations<textarea name="observations"></textarea></label>
            <div class="wide"><button type="submit" class="danger">Discharge</button></div>
            </form></section>
            """
    }

    /// Every stay before this one, the latest first: its admission, its discharge and its last vitals.
    var earlierStays: HTML {
        guard !animal.earlierStays.isEmpty else { return .empty }
        let cards = animal.earlierStays.enumerated().map { index, stay -> HTML in
            let a = stay.admission, d = stay.discharge
            let number = animal.earlierStays.count - index
            return """
                <section class="card stay" data-stay="\(number)"><h3>Stay \(number): \(ConsoleFormat.time(stay.admittedAt)) – \(ConsoleFormat.time(stay.dischargedAt))</h3><dl>
                \(Self.pairs([("Reason", a.motive), ("Veterinarian", a.veterinarian), ("Observations", a.observations), ("Breed", a.breed),
                      ("Weight", ConsoleFormat.number(a.weightKg, decimals: 1) + " kg"),
                      ("Last heart rate", stay.heartRate.map { ConsoleFormat.number($0.value, decimals: 0) + " bpm" }),
                      ("Last temperature", stay.temperature.map { ConsoleFormat.number($0.value, decimals: 1) + " °C" }),
                      ("Exit weight", d.map { ConsoleFormat.number($0.exitWeightKg, decimals: 1) + " kg" }),
                      ("Discharged by", d?.veterinarian), ("At discharge", d?.observations)]))
                </dl></section>
                """
        }
        return """
            <h2>Earlier stays (\(animal.earlierStays.count))</h2>
            <div class="grid">\(cards)</div>
            """
    }

    /// `<dt>`/`<dd>` pairs, the empty ones left out.
    static func pairs(_ items: [(String, String?)]) -> HTML {
        HTML.join(
            items.compactMap { label, value in
                guard let value, !value.isEmpty else { return nil }
                return "<dt>\(label)</dt><dd>\(value)</dd>"
            })
    }
}

/// The range the animal page's vitals charts show.
enum VitalsRange: String, CaseIterable, Sendable {
    case day = "24h", week = "7d", month = "30d"

    var title: String {
        switch self {
        case .day: return "last 24 hours"
        case .week: return "last 7 days"
        case .month: return "last 30 days"
        }
    }

    var span: Int64 {
        switch self {
        case .day: return Civil.microsPerDay
        case .week: return 7 * Civil.microsPerDay
        case .month: return 30 * Civil.microsPerDay
        }
    }

    /// Minute buckets for a day (each measurement its own point), hours beyond.
    var resolution: HistoryResolution { self == .day ? .minute : .hour }
}
