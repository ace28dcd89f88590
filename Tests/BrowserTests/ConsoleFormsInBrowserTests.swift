import BrokerHarness
import BrowserHarness
import Foundation
import HubJSON
import Testing

/// Every form and action of the console, done as a person does it in a real Chromium: click into
/// a field, type, pick from a picker, tick a box, click the button (or press Enter), answer the
/// confirmation. Each step is then checked twice: in the log (`GET /api/events`, what an auditor
/// reads) and on the page the person sees next.
@Suite(.serialized, .enabled(if: !BrowserRequirement.skipRequested, "HUB_SKIP_BROWSER=1 skips the real-browser tests"))
struct ConsoleFormsInBrowserTests {
    /// A clinic's day: admit a patient with every field of the seed's admission and a photo,
    /// record vitals (the button, then Enter), erase the owner's data, discharge.
    @Test func aClinicAdmitsRecordsVitalsErasesOwnerDataAndDischarges() async throws {
        try await withConsole(zone: "Europe/Berlin") { page, base, shots, _ in
            try await page.goto(base + "/animals")
            let photo = try Self.pngFile()
            let admission: [(String, String)] = [
                ("id", "rex"), ("name", "Rex"), ("species", "dog"), ("breed", "Labrador"), ("weight_kg", "31.5"), ("coat", "black"),
                ("beacon", "iBeacon:1de4b189-115e-45f6-b44e-509352269977-0-0"), ("owner_name", "Ana Silva"),
                ("owner_phone", "+351 912 345 678"), ("owner_address", "Rua das Flores 12, Lisboa"), ("motive", "limping, left foreleg"),
                ("veterinarian", "Dr. Costa")
            ]
            for (name, value) in admission { try await page.type("#admit ~ form [name=\"\(name)\"]", value) }
            try await page.pick("#admit ~ form [name=\"gender\"]", "male")
            try await page.pick("#admit ~ form [name=\"birth_date\"]", "2019-04-02")
            try await page.type("#admit ~ form [name=\"observations\"]", "Calm; eats well.")
            try await page.chooseFiles("#admit ~ form input[type=file]", [photo])
            try await page.screenshot(to: shots + "/admission.png")
            try await Self.submitting(page) { try await page.mouseClick("#admit ~ form button[type=submit]") }

            let admitted = try await Self.event(page, "AnimalAdmitted")
            #expect(admitted["data"]?["name"]?.stringValue == "Rex")
            #expect(admitted["data"]?["species"]?.stringValue == "dog")
            #expect(admitted["data"]?["breed"]?.stringValue == "Labrador")
            #expect(admitted["data"]?["gender"]?.stringValue == "male")
            #expect(admitted["data"]?["birth_date"]?.stringValue == "2019-04-02")
            #expect(admitted["data"]?["weight_kg"]?.doubleValue == 31.5)
            #expect(admitted["data"]?["coat"]?.stringValue == "black")
            #expect(admitted["data"]?["motive"]?.stringValue == "limping, left foreleg")
            #expect(admitted["data"]?["veterinarian"]?.stringValue == "Dr. Costa")
            #expect(admitted["data"]?["observations"]?.stringValue == "Calm; eats well.")
            #expect(admitted["data"]?["photo"]?.stringValue?.hasSuffix(".png") == true, "\(admitted)")
            #expect(admitted["actor"]?.stringValue == "http:local")
            // The owner's data is in the log sealed, never as typed.
            #expect(!admitted.serialized().contains("Ana Silva"))
            #expect(try await page.text("[data-animal=\"rex\"]")?.contains("Rex") == true)

            // The animal's page: the admission as typed, the owner opened, the photo shown.
            try await page.goto(base + "/animals/rex")
            let body = try await page.text("main") ?? ""
            for shown in ["Labrador", "31.5 kg", "Dr. Costa", "Ana Silva", "+351 912 345 678", "Rua das Flores 12, Lisboa"] {
                #expect(body.contains(shown), "the animal page does not show \(shown)")
            }
            #expect(try await page.evaluate("document.querySelector('img.photo')?.naturalWidth ?? 0") == .number(2))

            // Vitals: heart rate with the button, temperature with Enter.
            try await page.type("#vitals-form [name=heart_rate]", "92")
            try await Self.submitting(page) { try await page.mouseClick("#vitals-form button[type=submit]") }
            let heart = try await Self.event(page, "ReadingRecorded")
            #expect(heart["data"]?["quantity"]?.stringValue == "heart_rate" && heart["data"]?["value"]?.doubleValue == 92)
            try await page.type("#vitals-form [name=temperature]", "38.6")
            try await Self.submitting(page) { try await page.press("Enter") }
            let temperature = try await Self.event(page, "ReadingRecorded")
            #expect(temperature["data"]?["quantity"]?.stringValue == "temperature" && temperature["data"]?["value"]?.doubleValue == 38.6)
            let whereabouts = try await page.text("main") ?? ""
            #expect(
                whereabouts.contains("92 bpm") && whereabouts.contains("38.6 °C"), "latest vitals not shown: \(whereabouts.prefix(600))")
            // The 24 h charts hold the two measurements, their values written beside them.
            #expect(try await page.evaluate("document.querySelectorAll('svg.chart circle.dot').length") == .number(2))
            #expect(
                try await page.evaluate("[...document.querySelectorAll('svg.chart text.value')].map(t => t.textContent).join(' ')")
                    == .string("92 38.6"))
            try await page.screenshot(to: shots + "/animal.png")

            // Erase the owner's data: the confirmation is answered, the page says it is gone.
            try await Self.submitting(page) { try await page.mouseClick("button[data-confirm^=\"Erase\"]") }
            #expect(page.dialogs.last == "Erase the owner's contact data for good?")
            _ = try await Self.event(page, "OwnerDataErased")
            #expect(try await page.text("main")?.contains("Erased: the key that sealed it was deleted.") == true)
            #expect(try await page.text("main")?.contains("Ana Silva") == false)

            // Discharge with an exit weight, the veterinarian and a note.
            try await page.type("form[data-command*=discharge_animal] [name=exit_weight_kg]", "30.9")
            try await page.type("form[data-command*=discharge_animal] [name=veterinarian]", "Dr. Costa")
            try await page.type("form[data-command*=discharge_animal] [name=observations]", "Walks well.")
            try await Self.submitting(page) { try await page.mouseClick("form[data-command*=discharge_animal] button[type=submit]") }
            #expect(page.dialogs.last == "Discharge Rex now?")
            let discharged = try await Self.event(page, "AnimalDischarged")
            #expect(discharged["data"]?["exit_weight_kg"]?.doubleValue == 30.9)
            #expect(discharged["data"]?["observations"]?.stringValue == "Walks well.")
            #expect(try await page.text("main")?.contains("Discharged") == true)
        }
    }

    /// A patient comes back: its first stay (the allergy noted at admission, the discharge, the last
    /// vitals) stays on its page apart from the new one; triage vitals taken before the second
    /// admission was saved are taken into the new stay; Enter in the discharge form asks first.
    @Test func aReAdmittedPatientKeepsItsEarlierStayApartFromTheNewOne() async throws {
        try await withConsole(zone: "Europe/Berlin") { page, base, shots, _ in
            func admit(_ fields: [(String, String)]) async throws {
                try await page.goto(base + "/animals")
                for (name, value) in fields { try await page.type("#admit ~ form [name=\"\(name)\"]", value) }
                try await Self.submitting(page) { try await page.mouseClick("#admit ~ form button[type=submit]") }
            }
            let common = [("id", "bolt"), ("name", "Bolt"), ("species", "dog"), ("weight_kg", "18.4"), ("beacon", "60:87:57:4C:9B:C3")]
            try await admit(common + [("motive", "bite wound"), ("veterinarian", "Dr. Costa"), ("observations", "Allergic to penicillin")])
            try await page.goto(base + "/animals/bolt")
            try await page.type("#vitals-form [name=temperature]", "39.4")
            try await Self.submitting(page) { try await page.press("Enter") }

            // Enter in "Exit weight" asks before it discharges.
            try await page.type("form[data-command*=discharge_animal] [name=exit_weight_kg]", "18.1")
            try await page.type("form[data-command*=discharge_animal] [name=veterinarian]", "Dr. Costa")
            try await Self.submitting(page) { try await page.press("Enter") }
            #expect(page.dialogs.last == "Discharge Bolt now?")
            _ = try await Self.event(page, "AnimalDischarged")

            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "Europe/Berlin")
            formatter.dateFormat = "yyyy-MM-dd'T'HH:mm"
            try await admit(common + [("motive", "vaccination"), ("veterinarian", "Dr. Lima")])
            try await page.goto(base + "/animals/bolt")

            // A vital dated in the first stay is not taken into the second: the page says why.
            try await page.type("#vitals-form [name=heart_rate]", "99")
            try await page.pick("#vitals-form [name=measured_at]", formatter.string(from: Date().addingTimeInterval(-120)))
            try await page.mouseClick("#vitals-form button[type=submit]")
            try await page.waitFor(
                "(document.querySelector('#answer')?.textContent ?? '').includes('reading_before_admission')", timeout: .seconds(5))
            #expect(try await page.text("#answer")?.contains("within its earlier stay") == true)
            try await page.goto(base + "/animals/bolt")
            try await page.type("#vitals-form [name=heart_rate]", "104")
            try await Self.submitting(page) { try await page.press("Enter") }

            let body = try await page.text("main") ?? ""
            #expect(body.contains("Earlier stays (1)"), "\(body.prefix(1500))")
            let earlier = try await page.text("[data-stay=\"1\"]") ?? ""
            for shown in ["bite wound", "Allergic to penicillin", "Dr. Costa", "18.1 kg", "39.4 °C"] {
                #expect(earlier.contains(shown), "the earlier stay does not show \(shown): \(earlier)")
            }
            let current = try await page.text("section.card") ?? ""
            #expect(current.contains("vaccination") && !current.contains("Allergic to penicillin"), "\(current)")
            #expect(body.contains("104 bpm"))
            // The charts hold the new stay only: never the first stay's temperature (a minute shared
            // by both stays, as in this test, is left out of the new stay's chart).
            let charted = try await page.evaluate(
                "[...document.querySelectorAll('svg.chart text.value')].map(t => t.textContent).join(' ')")
            #expect(!(charted.stringValue ?? "").contains("39.4"), "\(charted)")

            // Triage: a new patient's vitals measured before its admission was saved are its stay's.
            try await admit([("id", "mia"), ("name", "Mia"), ("species", "cat"), ("weight_kg", "4.2"), ("beacon", "60:87:57:4C:9B:C4")])
            try await page.goto(base + "/animals/mia")
            try await page.type("#vitals-form [name=temperature]", "38.9")
            try await page.pick("#vitals-form [name=measured_at]", formatter.string(from: Date().addingTimeInterval(-20 * 60)))
            try await Self.submitting(page) { try await page.mouseClick("#vitals-form button[type=submit]") }
            let triage = try await Self.event(page, "ReadingRecorded")
            #expect(triage["data"]?["value"]?.doubleValue == 38.9, "\(triage)")
            #expect(try await page.text("main")?.contains("38.9 °C") == true)
            try await page.screenshot(to: shots + "/readmission.png")
        }
    }

    /// A household's set-up: add a device, rename it, give it activations (add, edit, change to
    /// daily, delete), define, edit, use and remove a group and a scene, remove the device; then
    /// all off, and the audit's timeline filtered by stream and a picked time, and the chain verified.
    @Test func aHouseholdAddsRenamesSchedulesGroupsAndRemovesDevices() async throws {
        try await withConsole(zone: "Europe/Berlin") { page, base, _, _ in
            try await page.goto(base + "/")
            // Add a device.
            try await page.type("#add-device-form [name=id]", "heater")
            try await page.type("#add-device-form [name=name]", "Heater")
            try await page.pick("#add-device-form [name=driver]", "virtual")
            try await Self.submitting(page) { try await page.mouseClick("#add-device-form button[type=submit]") }
            let registered = try await Self.event(page, "DeviceRegistered")
            #expect(registered["stream"]?.stringValue == "device/heater")
            #expect(try await page.text("[data-device=\"heater\"] h3")?.contains("Heater") == true)

            // A group of the lamp and the fan; switched on from its card.
            try await page.type("#group-form [name=id]", "downstairs")
            try await page.type("#group-form [name=name]", "Downstairs")
            try await page.mouseClick("#group-form input[name=members][value=lamp]")
            try await page.mouseClick("#group-form input[name=members][value=fan]")
            try await Self.submitting(page) { try await page.mouseClick("#group-form button[type=submit]") }
            #expect(Self.members(try await Self.event(page, "GroupDefined")) == ["fan", "lamp"])
            try await page.mouseClick("[data-group=\"downstairs\"] button[data-command*='\"ON\"']")
            try await page.waitFor(Self.isOn("lamp") + " && " + Self.isOn("fan"), timeout: .seconds(5))
            // Edit: the form is filled from the group; the fan is swapped for the heater.
            try await page.mouseClick("[data-group=\"downstairs\"] button[data-action=edit]")
            #expect(try await page.evaluate("document.querySelector('#group-form [name=id]').value") == "downstairs")
            try await page.mouseClick("#group-form input[name=members][value=fan]")
            try await page.mouseClick("#group-form input[name=members][value=heater]")
            try await Self.submitting(page) { try await page.mouseClick("#group-form button[type=submit]") }
            #expect(Self.members(try await Self.event(page, "GroupDefined")) == ["heater", "lamp"])
            try await Self.submitting(page) { try await page.mouseClick("[data-group=\"downstairs\"] button[data-action=remove]") }
            _ = try await Self.event(page, "GroupRemoved")
            #expect(try await page.evaluate("document.querySelector('[data-group=\"downstairs\"]') === null") == true)

            // A scene: lamp off, fan on; applied; edited to put the heater on too; removed.
            try await page.type("#scene-form [name=id]", "evening")
            try await page.type("#scene-form [name=name]", "Evening")
            try await page.pick("#scene-form [name=\"states.lamp\"]", "OFF")
            try await page.pick("#scene-form [name=\"states.fan\"]", "ON")
            try await Self.submitting(page) { try await page.mouseClick("#scene-form button[type=submit]") }
            let scene = try await Self.event(page, "SceneDefined")
            #expect(scene["data"]?["states"] == ["lamp": "OFF", "fan": "ON"] || scene.serialized().contains("\"lamp\""), "\(scene)")
            try await page.mouseClick("[data-scene=\"evening\"] button[data-action=apply]")
            try await page.waitFor("!(\(Self.isOn("lamp"))) && \(Self.isOn("fan"))", timeout: .seconds(5))
            try await page.mouseClick("[data-scene=\"evening\"] button[data-action=edit]")
            #expect(try await page.evaluate("document.querySelector('#scene-form [name=\"states.lamp\"]').value") == "OFF")
            try await page.pick("#scene-form [name=\"states.heater\"]", "ON")
            try await Self.submitting(page) { try await page.mouseClick("#scene-form button[type=submit]") }
            #expect(try await Self.event(page, "SceneDefined").serialized().contains("heater"))
            try await Self.submitting(page) { try await page.mouseClick("[data-scene=\"evening\"] button[data-action=remove]") }
            _ = try await Self.event(page, "SceneRemoved")

            // The lamp's page: rename it.
            try await page.goto(base + "/devices/lamp")
            try await page.type("#rename-form [name=name]", "Desk lamp")
            try await Self.submitting(page) { try await page.mouseClick("#rename-form button[type=submit]") }
            #expect(try await Self.event(page, "DeviceRenamed")["data"]?["name"]?.stringValue == "Desk lamp")
            #expect(try await page.text("h1") == "Desk lamp")

            // An activation: 18:00 on 15 January 2030 in Berlin (UTC+1 then) is 17:00 UTC; 30
            // minutes every 2 hours.
            try await page.type("#activation-form [name=name]", "evening")
            try await page.pick("#activation-form [name=start]", "2030-01-15T18:00")
            try await page.type("#activation-form [name=length]", "30")
            try await page.pick("#activation-form [name=repeats]", "every")
            try await page.type("#activation-form [name=period]:not([type=hidden])", "120")
            try await Self.submitting(page) { try await page.mouseClick("#activation-form button[type=submit]") }
            let added = try await Self.event(page, "ActivationChanged")
            #expect(added["data"]?["change"]?.stringValue == "added")
            #expect(added["data"]?["start"]?.stringValue == "2030-01-15T17:00:00.000000Z")
            #expect(added["data"]?["length_minutes"]?.doubleValue == 30 && added["data"]?["period_minutes"]?.doubleValue == 120, "\(added)")
            let row = try await page.text("[data-activation=\"evening\"]") ?? ""
            #expect(row.contains("2030-01-15 18:00") && row.contains("30 minutes") && row.contains("every 2 hours"), "row: \(row)")

            // Edit: the form shows it in local time; 45 minutes, daily at 07:30 on Monday and Friday.
            try await page.mouseClick("[data-activation=\"evening\"] button[data-action=edit]")
            #expect(try await page.evaluate("document.querySelector('#activation-form [name=start]').value") == "2030-01-15T18:00")
            #expect(try await page.evaluate("document.querySelector('#activation-form [name=op]').value") == "update")
            try await page.type("#activation-form [name=length]", "45")
            try await page.pick("#activation-form [name=repeats]", "daily")
            try await page.pick("#activation-form [name=\"repeat.at\"]", "07:30")
            try await page.mouseClick("#activation-form input[name=\"repeat.days\"][value=mon]")
            try await page.mouseClick("#activation-form input[name=\"repeat.days\"][value=fri]")
            try await Self.submitting(page) { try await page.mouseClick("#activation-form button[type=submit]") }
            let updated = try await Self.event(page, "ActivationChanged")
            #expect(updated["data"]?["change"]?.stringValue == "updated")
            #expect(updated["data"]?["length_minutes"]?.doubleValue == 45 && updated["data"]?["period_minutes"]?.doubleValue == 0)
            #expect(updated["data"]?["repeat"] == ["at": "07:30", "days": ["mon", "fri"], "time_zone": "Europe/Berlin"], "\(updated)")
            #expect(try await page.text("[data-activation=\"evening\"]")?.contains("daily at 07:30 (Europe/Berlin) on mon, fri") == true)

            // Delete it (confirmed).
            try await Self.submitting(page) { try await page.mouseClick("[data-activation=\"evening\"] button[data-action=delete]") }
            #expect(page.dialogs.last == "Delete the activation “evening”?")
            #expect(try await Self.event(page, "ActivationChanged")["data"]?["change"]?.stringValue == "removed")
            #expect(try await page.evaluate("document.querySelector('[data-activation]') === null") == true)

            // Remove the heater from its page.
            try await page.goto(base + "/devices/heater")
            try await Self.submitting(page) { try await page.mouseClick("button[data-action=remove]") }
            _ = try await Self.event(page, "DeviceRemoved")
            #expect(try await page.text("main")?.contains("This device was removed") == true)
            // Every time the pages showed was in the household's zone, and they say which.
            #expect(try await page.text(".zone-note") == "Times are in Europe/Berlin.")

            // All off, confirmed: the lamp that was on goes off.
            try await page.goto(base + "/")
            try await page.mouseClick(#"[data-device="lamp"] button[data-action="on"]"#)
            try await page.waitFor(Self.isOn("lamp"), timeout: .seconds(5))
            try await page.mouseClick("button[data-action=all-off]")
            #expect(page.dialogs.last == "Switch every device off?")
            try await page.waitFor("!(\(Self.isOn("lamp"))) && !(\(Self.isOn("fan")))", timeout: .seconds(5))
            #expect(try await Self.event(page, "MultiSwitchRequested")["actor"]?.stringValue == "http:local")

            // The audit: the lamp's events since a day picked in local time, then the chain verified.
            try await page.goto(base + "/audit")
            try await page.type(#"form[action="/audit"] [name=stream]"#, "device/lamp")
            try await page.pick(#"form[action="/audit"] [name=from]"#, "2020-01-01T00:00")
            try await page.mouseClick(#"form[action="/audit"] button[type=submit]"#)
            try await page.waitFor(
                "location.search.includes('stream=device%2Flamp') && document.readyState === 'complete'", timeout: .seconds(10))
            let streams = try await page.evaluate(
                "[...document.querySelectorAll('main table tbody tr')].map(r => r.children[2].textContent)")
            let shown = streams.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(!shown.isEmpty && shown.allSatisfy { $0 == "device/lamp" }, "the filtered timeline shows \(shown)")
            try await page.mouseClick("a[href=\"/audit?verify=1\"]")
            try await page.waitFor("document.body.textContent.includes('Log sound: all')", timeout: .seconds(10))
            // The household as it was at event 2 (lamp and fan registered from the configuration, nothing else yet).
            try await page.type(#"form[action="/audit#as-of"] [name=asof]"#, "2")
            try await page.press("Enter")
            try await page.waitFor("location.search.includes('asof=2') && document.readyState === 'complete'", timeout: .seconds(10))
            let asOf = try await page.text("#as-of ~ div pre") ?? ""
            #expect(asOf.contains("lamp") && !asOf.contains("heater"), "as of 2: \(asOf.prefix(400))")
        }
    }

    /// A Tasmota plug announces itself on the broker (`hub sim tasmota`, Tasmota's own discovery
    /// message); the Discovered page lists it, and one click on `Adopt` registers it.
    @Test func aPlugAnnouncedOnTheBrokerIsAdoptedWithOneClick() async throws {
        try await withConsole(zone: "UTC") { page, base, _, brokerPort in
            guard let hubPath = builtExecutable("hub") else { throw BrowserError("the hub executable was not built") }
            let sim = try spawn {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: hubPath)
                p.arguments = ["sim", "tasmota", "--port", "\(brokerPort)", "--topic", "plug7", "--tele-period", "0.5"]
                p.standardOutput = FileHandle.nullDevice
                p.standardError = FileHandle.nullDevice
                return p
            }
            defer { sim.terminate(); sim.waitUntilExit() }
            // A person reloads the page until the plug shows up.
            let deadline = ContinuousClock.now + .seconds(20)
            while true {
                try await page.goto(base + "/discovered")
                if try await page.evaluate("document.querySelector('[data-discovered] button') !== null") == true { break }
                guard ContinuousClock.now < deadline else { throw BrowserError("the simulated Tasmota was never listed under Discovered") }
                try await Task.sleep(for: .milliseconds(500))
            }
            try await Self.submitting(page) { try await page.mouseClick("[data-discovered] button") }
            let registered = try await Self.event(page, "DeviceRegistered")
            #expect(registered["data"]?["driver"]?.stringValue == "tasmota", "\(registered)")
            let id = String((registered["stream"]?.stringValue ?? "").dropFirst("device/".count))
            try await page.goto(base + "/")
            try await page.waitFor(#"document.querySelector('[data-device="\#(id)"]') !== null"#, timeout: .seconds(5))
        }
    }

    // MARK: Helpers

    /// A hub (`lamp` and `fan`, virtual) with its console in `zone`, a browser page, the console's
    /// base URL, where screenshots go (docs/screenshots with HUB_WRITE_SCREENSHOTS=1) and the
    /// broker's port.
    func withConsole(zone: String, _ body: (Page, String, String, Int) async throws -> Void) async throws {
        let broker = try await TestBroker.startAsync()
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = dir + "/hub.json"
        try """
        {"time_zone": "\(zone)", "devices": [{"id": "lamp", "driver": "virtual", "name": "Lamp"},
                                              {"id": "fan", "driver": "virtual", "name": "Fan"}]}
        """.write(toFile: config, atomically: true, encoding: .utf8)
        let port = try TestBroker.freePort()
        let hub = try await RunningHub.start([
            "--data-dir", dir + "/data", "--config", config, "--mqtt-port", "\(broker.port)",
            "--http", "127.0.0.1:\(port)"
        ])
        defer { hub.stop() }
        let shots =
            ProcessInfo.processInfo.environment["HUB_WRITE_SCREENSHOTS"] == "1"
            ? ConsoleInBrowserTests.screenshotDirectory : dir + "/screenshots"
        let browser = try await Browser.launch(width: 1280, height: 900)
        do {
            let page = try await browser.newPage()
            try await body(page, "http://127.0.0.1:\(port)", shots, broker.port)
            #expect(!page.log.contains { $0.hasPrefix("uncaught") }, "the page threw: \(page.log)")
        } catch {
            await browser.close()
            throw BrowserError("\(error)\n--- hub run ---\n\(hub.output.suffix(3000))")
        }
        await browser.close()
    }

    /// Runs `action` (a click or a key that sends a form or a button's command) and waits until
    /// the hub's answer is shown and the page has reloaded with what it changed.
    static func submitting(_ page: Page, _ action: () async throws -> Void) async throws {
        let before = try await page.evaluate("fetch('/api/events?limit=1000').then(r => r.json()).then(a => a.data.length)")
        try await page.evaluate("window.hubTestMark = 'not reloaded'")
        try await action()
        do {
            try await page.waitFor("window.hubTestMark === undefined && document.readyState === 'complete'", timeout: .seconds(10))
        } catch {
            let shown = (try? await page.text("#answer")) ?? nil
            throw BrowserError("the page did not reload after the action; it says: \(shown ?? "nothing")\n\(error)")
        }
        let after = try await page.evaluate("fetch('/api/events?limit=1000').then(r => r.json()).then(a => a.data.length)")
        #expect((after.doubleValue ?? 0) > (before.doubleValue ?? 0), "nothing reached the log")
    }

    /// The newest event of `type` in the log, as `GET /api/events` answers it.
    static func event(_ page: Page, _ type: String) async throws -> JSONValue {
        let answer = try await page.evaluate("fetch('/api/events?limit=1000').then(r => r.json())")
        let events = answer["data"]?.arrayValue ?? []
        guard let found = events.last(where: { $0["type"]?.stringValue == type }) else {
            throw BrowserError("no \(type) in the log; its last events: \(events.suffix(3).map { $0.serialized() })")
        }
        return found
    }

    /// A `GroupDefined` event's members, sorted.
    static func members(_ event: JSONValue) -> [String] {
        (event["data"]?["members"]?.arrayValue ?? []).compactMap(\.stringValue).sorted()
    }

    static func isOn(_ device: String) -> String {
        #"document.querySelector('[data-device="\#(device)"] [data-field="state"]')?.textContent.trim() === 'on'"#
    }

    /// A 2 x 1 PNG in a temporary file.
    static func pngFile() throws -> String {
        let bytes: [UInt8] = [
            0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
            0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x7B, 0x40, 0xE8,
            0xDD, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0xF8, 0xCF, 0x00, 0x04,
            0xFF, 0x01, 0x07, 0x00, 0x01, 0xFF, 0xE2, 0x23, 0x9E, 0x59, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
            0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82
        ]
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hub-photo-\(UUID().uuidString).png").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }
}
