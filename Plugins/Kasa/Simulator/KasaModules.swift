import DriverAPI
import Foundation
import Kasa

/// The simulated HS110's modules: each request module is answered by its handler, each method
/// sub-reply carries its own `err_code`, as the device does.
extension KasaSimState {
    typealias Args = JSONValue
    typealias Reply = JSONValue

    static func error(_ code: Int, _ message: String) -> Reply { ["err_code": .int(code), "err_msg": .string(message)] }
    static var moduleNotSupported: Reply { error(-1, "module not support") }
    static var memberNotSupported: Reply { error(-2, "member not support") }
    static var invalidArgument: Reply { error(-3, "invalid argument") }
    static var tableFull: Reply { error(-10, "table is full") }
    static var entryNotExist: Reply { error(-14, "entry not exist") }

    /// Answers one request object (several modules and methods may be batched) at time `now`.
    mutating func handle(_ request: JSONValue, now: Double) -> Reply {
        advance(to: now)
        requestCount += 1
        // `{"context":{"child_ids":[...]}}` beside the modules aims the request at a strip's outlets.
        let childIds = (request["context"]?["child_ids"]?.arrayValue ?? []).compactMap(\.stringValue)
        noteChildIds(childIds)
        var reply: Reply = [:]
        for (module, body) in request.objectValue ?? [] where module != "context" {
            for (method, _) in body.objectValue ?? [] { noteRequest("\(module).\(method)") }
            guard let handler = Self.handler(for: module), module != "emeter" || model.metered else {
                reply[module] = Self.moduleNotSupported
                continue
            }
            guard let methods = body.objectValue else {
                reply[module] = Self.invalidArgument
                continue
            }
            var moduleReply: Reply = [:]
            for (method, rawArgs) in methods {
                // Arguments are an object; null stands for none.
                let args: Args?
                switch rawArgs {
                case .null: args = [:]
                case .object: args = rawArgs
                default: args = nil
                }
                guard let args else {
                    moduleReply[method] = Self.invalidArgument
                    continue
                }
                var answer: Reply
                if !childIds.isEmpty, let childReply = child(module, method, args, ids: childIds, now: now) {
                    answer = childReply
                } else {
                    answer = handler(&self, method, args, now) ?? Self.memberNotSupported
                }
                if answer["err_code"] == nil { answer["err_code"] = 0 }
                moduleReply[method] = answer
            }
            reply[module] = moduleReply
        }
        return reply
    }

    typealias Handler = (inout KasaSimState, String, Args, Double) -> Reply?

    static func handler(for module: String) -> Handler? {
        switch module {
        case "system": { $0.system($1, $2, $3) }
        case "time": { $0.time($1, $2, $3) }
        case "emeter": { $0.emeter($1, $2, $3) }
        case "schedule": { $0.scheduleModule($1, $2, $3) }
        case "count_down": { $0.countdownModule($1, $2, $3) }
        case "anti_theft": { $0.antiTheftModule($1, $2, $3) }
        case "cnCloud": { $0.cloud($1, $2, $3) }
        case "netif": { $0.netif($1, $2, $3) }
        default: nil
        }
    }

    // MARK: - a strip's outlets

    /// The answer of a method aimed at outlets (`context.child_ids`); nil: the method is the strip's.
    mutating func child(_ module: String, _ method: String, _ args: Args, ids: [String], now: Double) -> Reply? {
        guard !children.isEmpty else { return nil }
        let indices = ids.compactMap { id in children.firstIndex { $0.id == id } }
        switch (module, method) {
        case ("system", "set_relay_state"):
            guard indices.count == ids.count else { return Self.invalidArgument }
            guard let state = KasaJSON.int(args["state"]), state == 0 || state == 1 else { return Self.invalidArgument }
            if !ignoresSwitching { for i in indices { setChild(i, state == 1, at: now) } }
            return [:]
        case ("system", "set_dev_alias"):
            guard indices.count == ids.count, let name = args["alias"]?.stringValue, name.utf8.count <= 31 else {
                return Self.invalidArgument
            }
            for i in indices { children[i].alias = name }
            return [:]
        case ("emeter", "get_realtime"):
            guard let i = indices.first, indices.count == ids.count else { return Self.invalidArgument }
            return childRealtime(i)
        default:
            return nil
        }
    }

    /// One outlet's meter, as an HS300 (hardware 2.0) answers it: new-firmware units and the `slot_id`.
    mutating func childRealtime(_ i: Int) -> Reply {
        let s = sample(on: children[i].on)
        return [
            "current_ma": .int(Int((s.current * 1000).rounded())), "voltage_mv": .int(Int((s.voltage * 1000).rounded())),
            "power_mw": .int(Int((s.power * 1000).rounded())), "total_wh": .int(Int(children[i].energyWh.rounded(.down))),
            "slot_id": .int(i)
        ]
    }

    /// A strip's sysinfo, in the layout of python-kasa's fixtures `tests/fixtures/iot/HS300(US)_2.0_1.0.12.json`
    /// and `KP303(UK)_1.0_1.0.3.json`: no `relay_state`, the outlets in `children`.
    func stripSysinfo(now: Double) -> Reply {
        var info: Reply = [
            "alias": .string(alias),
            "child_num": .int(children.count),
            "children": .array(
                children.map { c -> Reply in
                    [
                        "alias": .string(c.alias), "id": .string(c.id), "next_action": ["type": -1],
                        "on_time": .int(c.on ? Int(max(0, now - c.onSince)) : 0), "state": .int(c.on ? 1 : 0)
                    ]
                }),
            "deviceId": .string(deviceId),
            "err_code": 0,
            "feature": .string(model.metered ? "TIM:ENE" : "TIM"),
            "hwId": .string(hwId),
            "hw_ver": .string(model.hardware),
            "latitude_i": .int(Int((latitude * 10_000).rounded())),
            "led_off": .int(ledOff ? 1 : 0),
            "longitude_i": .int(Int((longitude * 10_000).rounded())),
            "mac": .string(mac),
            "mic_type": "IOT.SMARTPLUGSWITCH",
            "model": .string(model.modelName),
            "oemId": .string(oemId),
            "rssi": -44,
            "status": "new",
            "sw_ver": .string(model.softwareVersion),
            "updating": 0
        ]
        if model == .kp303 { info["ntc_state"] = 0 }
        return info
    }

    // MARK: - system

    mutating func system(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        switch method {
        case "get_sysinfo":
            return children.isEmpty ? sysinfo(now: now) : stripSysinfo(now: now)
        case "set_relay_state":
            guard let state = KasaJSON.int(args["state"]), state == 0 || state == 1 else { return Self.invalidArgument }
            guard !ignoresSwitching else { return [:] }
            setRelay(state == 1, at: now)
            // Without child_ids a strip switches every outlet (the simulator's choice, not checked against a device).
            for i in children.indices { setChild(i, state == 1, at: now) }
            return [:]
        case "set_led_off":
            guard let off = KasaJSON.int(args["off"]), off == 0 || off == 1 else { return Self.invalidArgument }
            ledOff = off == 1
            return [:]
        case "set_dev_alias":
            guard let name = args["alias"]?.stringValue, name.utf8.count <= 31 else { return Self.invalidArgument }
            alias = name
            return [:]
        case "set_dev_location":
            guard let lat = KasaJSON.double(args["latitude"]), let lon = KasaJSON.double(args["longitude"]),
                abs(lat) <= 90, abs(lon) <= 180
            else { return Self.invalidArgument }
            latitude = lat
            longitude = lon
            return [:]
        case "reboot", "reset":
            if args["delay"] != nil, (KasaJSON.int(args["delay"]) ?? -1) < 0 { return Self.invalidArgument }
            return [:]
        case "set_mac_addr":
            guard let value = args["mac"]?.stringValue, value.count == 17 else { return Self.invalidArgument }
            mac = value.replacingOccurrences(of: "-", with: ":").uppercased()
            return [:]
        case "set_device_id":
            guard let value = args["deviceId"]?.stringValue, !value.isEmpty else { return Self.invalidArgument }
            deviceId = value
            return [:]
        case "set_hw_id":
            guard let value = args["hwId"]?.stringValue, !value.isEmpty else { return Self.invalidArgument }
            hwId = value
            return [:]
        case "get_dev_icon":
            return ["icon": "", "hash": ""]
        case "set_dev_icon":
            return (args["icon"]?.stringValue != nil) ? [:] : Self.invalidArgument
        case "check_new_config":
            return [:]
        default:
            return nil
        }
    }

    func sysinfo(now: Double) -> Reply {
        var info: Reply = [
            "sw_ver": .string(firmware == .new ? "1.0.4 Build 191111 Rel.143500" : "1.2.6 Build 200727 Rel.120821"),
            "hw_ver": .string(firmware == .new ? "4.0" : "2.0"),
            "type": "IOT.SMARTPLUGSWITCH",
            "model": "HS110(EU)",
            "mac": .string(mac),
            "dev_name": "Smart Wi-Fi Plug With Energy Monitoring",
            "alias": .string(alias),
            "relay_state": .int(relayOn ? 1 : 0),
            "on_time": .int(relayOn ? Int(max(0, now - relayOnSince)) : 0),
            "active_mode": .string(activeMode),
            "feature": "TIM:ENE",
            "updating": 0,
            "icon_hash": "",
            "rssi": -52,
            "led_off": .int(ledOff ? 1 : 0),
            "deviceId": .string(deviceId),
            "hwId": .string(hwId),
            "fwId": .string(String(repeating: "0", count: 32)),
            "oemId": .string(oemId),
            "next_action": nextAction(now: now),
            "err_code": 0
        ]
        if firmware == .new {
            info["latitude_i"] = .int(Int((latitude * 10_000).rounded()))
            info["longitude_i"] = .int(Int((longitude * 10_000).rounded()))
        } else {
            info["latitude"] = .number(latitude)
            info["longitude"] = .number(longitude)
        }
        return info
    }

    var activeMode: String {
        if let rule = countdown.rules.first, KasaJSON.int(rule["enable"]) == 1 { return "count_down" }
        if schedule.enable == 1, schedule.rules.contains(where: { KasaJSON.int($0["enable"]) == 1 }) { return "schedule" }
        return "none"
    }

    // MARK: - time

    mutating func time(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        switch method {
        case "get_time":
            let c = Self.calendar.dateComponents(
                [.year, .month, .day, .hour, .minute, .second],
                from: Date(timeIntervalSince1970: now))
            return [
                "year": .int(c.year!), "month": .int(c.month!), "mday": .int(c.day!), "hour": .int(c.hour!),
                "min": .int(c.minute!), "sec": .int(c.second!)
            ]
        case "get_timezone":
            return ["index": .int(timezoneIndex)]
        case "set_timezone":
            guard let index = KasaJSON.int(args["index"]), (0...109).contains(index) else { return Self.invalidArgument }
            timezoneIndex = index
            return [:]
        default:
            return nil
        }
    }

    // MARK: - emeter

    mutating func emeter(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        switch method {
        case "get_realtime":
            if !children.isEmpty {
                // The strip as a whole: its outlets' sum (the simulator's choice).
                var total: Reply = [:]
                let parts = children.indices.map { childRealtime($0) }
                for key in ["current_ma", "power_mw", "total_wh"] {
                    total[key] = .int(parts.reduce(0) { $0 + (KasaJSON.int($1[key]) ?? 0) })
                }
                total["voltage_mv"] = parts.first?["voltage_mv"] ?? 0
                return total
            }
            let s = sample()
            if firmware == .new {
                return [
                    "current_ma": .int(Int((s.current * 1000).rounded())), "voltage_mv": .int(Int((s.voltage * 1000).rounded())),
                    "power_mw": .int(Int((s.power * 1000).rounded())), "total_wh": .int(Int(energyWh.rounded(.down)))
                ]
            }
            return [
                "current": .number(s.current), "voltage": .number(s.voltage), "power": .number(s.power),
                "total": .number(Self.kWh(energyWh))
            ]
        case "get_daystat":
            guard let year = KasaJSON.int(args["year"]), let month = KasaJSON.int(args["month"]),
                (1...12).contains(month), (2000...2100).contains(year)
            else { return Self.invalidArgument }
            let days = dayEnergyWh.keys.filter { $0.year == year && $0.month == month }.sorted { $0.day < $1.day }
            return [
                "day_list": .array(
                    days.map { day -> Reply in
                        var entry: Reply = ["year": .int(year), "month": .int(month), "day": .int(day.day)]
                        for (k, v) in energyField(dayEnergyWh[day] ?? 0).objectValue ?? [] { entry[k] = v }
                        return entry
                    })
            ]
        case "get_monthstat":
            guard let year = KasaJSON.int(args["year"]), (2000...2100).contains(year) else { return Self.invalidArgument }
            var months: [Int: Double] = [:]
            for (day, wh) in dayEnergyWh where day.year == year { months[day.month, default: 0] += wh }
            return [
                "month_list": .array(
                    months.keys.sorted().map { month -> Reply in
                        var entry: Reply = ["year": .int(year), "month": .int(month)]
                        for (k, v) in energyField(months[month] ?? 0).objectValue ?? [] { entry[k] = v }
                        return entry
                    })
            ]
        case "erase_emeter_stat":
            eraseEnergy()
            return [:]
        case "get_vgain_igain":
            return ["vgain": 13462, "igain": 16835]
        case "set_vgain_igain":
            guard KasaJSON.int(args["vgain"]) != nil, KasaJSON.int(args["igain"]) != nil else { return Self.invalidArgument }
            return [:]
        default:
            return nil
        }
    }

    static func kWh(_ wh: Double) -> Double { (wh).rounded(.down) / 1000 }

    func energyField(_ wh: Double) -> Reply {
        firmware == .new ? ["energy_wh": .int(Int(wh.rounded()))] : ["energy": .number((wh).rounded() / 1000)]
    }

    // MARK: - schedule, anti_theft, count_down

    mutating func scheduleModule(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        switch method {
        case "get_next_action":
            return nextAction(now: now)
        case "get_daystat":
            guard let year = KasaJSON.int(args["year"]), let month = KasaJSON.int(args["month"]),
                (1...12).contains(month)
            else { return Self.invalidArgument }
            let days = dayOnSeconds.keys.filter { $0.year == year && $0.month == month }.sorted { $0.day < $1.day }
            return [
                "day_list": .array(
                    days.map {
                        [
                            "year": .int(year), "month": .int(month), "day": .int($0.day),
                            "time": .int(Int(((dayOnSeconds[$0] ?? 0) / 60).rounded()))
                        ] as Reply
                    })
            ]
        case "get_monthstat":
            guard let year = KasaJSON.int(args["year"]) else { return Self.invalidArgument }
            var months: [Int: Double] = [:]
            for (day, s) in dayOnSeconds where day.year == year { months[day.month, default: 0] += s }
            return [
                "month_list": .array(
                    months.keys.sorted().map {
                        [
                            "year": .int(year), "month": .int($0),
                            "time": .int(Int(((months[$0] ?? 0) / 60).rounded()))
                        ] as Reply
                    })
            ]
        case "erase_runtime_stat":
            dayOnSeconds = [:]
            return [:]
        default:
            return Self.rules(&schedule, method, args, validate: Self.validScheduleRule)
        }
    }

    mutating func antiTheftModule(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        Self.rules(&antiTheft, method, args) { rule in
            Self.validScheduleRule(rule) && KasaJSON.int(rule["emin"]).map { (0...1439).contains($0) } == true
        }
    }

    mutating func countdownModule(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        if method == "set_overall_enable" { return nil }
        let reply = Self.rules(&countdown, method, args) { rule in
            guard let delay = KasaJSON.int(rule["delay"]), delay > 0, delay <= 86_400,
                let act = KasaJSON.int(rule["act"]), act == 0 || act == 1,
                let enable = KasaJSON.int(rule["enable"]), enable == 0 || enable == 1
            else { return false }
            return rule["name"] == nil || (rule["name"]?.stringValue != nil)
        }
        if method == "add_rule" || method == "edit_rule", KasaJSON.int(reply?["err_code"]) ?? 0 == 0 {
            countdownArmedAt = now
        }
        return reply
    }

    static func validScheduleRule(_ rule: Args) -> Bool {
        guard let wday = rule["wday"]?.arrayValue, wday.count == 7, wday.allSatisfy({ KasaJSON.int($0) != nil }),
            let stime = KasaJSON.int(rule["stime_opt"]), (-1...2).contains(stime),
            let smin = KasaJSON.int(rule["smin"]), (0...1439).contains(smin),
            let sact = KasaJSON.int(rule["sact"]), (-1...1).contains(sact),
            let enable = KasaJSON.int(rule["enable"]), enable == 0 || enable == 1,
            rule["repeat"] == nil || KasaJSON.int(rule["repeat"]) != nil,
            rule["name"] == nil || (rule["name"]?.stringValue != nil)
        else { return false }
        return true
    }

    /// The rule-table methods shared by schedule, anti-theft and countdown.
    static func rules(
        _ table: inout KasaRuleTable, _ method: String, _ args: Args,
        validate: (Args) -> Bool
    ) -> Reply? {
        switch method {
        case "get_rules":
            var reply: Reply = ["rule_list": .array(table.rules)]
            if table.limit > 1 { reply["enable"] = .int(table.enable); reply["version"] = 2 }
            return reply
        case "add_rule":
            guard validate(args) else { return invalidArgument }
            guard table.rules.count < table.limit else { return tableFull }
            var rng = SystemRandomNumberGenerator()
            var rule = args
            rule["id"] = .string(KasaRuleTable.newId(using: &rng))
            table.rules.append(rule)
            return ["id": rule["id"]!]
        case "edit_rule":
            guard let id = args["id"]?.stringValue else { return invalidArgument }
            guard let index = table.index(of: id) else { return entryNotExist }
            guard validate(args) else { return invalidArgument }
            table.rules[index] = args
            return [:]
        case "delete_rule":
            guard let id = args["id"]?.stringValue else { return invalidArgument }
            guard let index = table.index(of: id) else { return entryNotExist }
            table.rules.remove(at: index)
            return [:]
        case "delete_all_rules":
            table.rules.removeAll()
            return [:]
        case "set_overall_enable":
            guard let enable = KasaJSON.int(args["enable"]), enable == 0 || enable == 1 else { return invalidArgument }
            table.enable = enable
            return [:]
        default:
            return nil
        }
    }

    /// The next schedule action (fixed-time rules only, UTC): `{"type":-1}` when there is none.
    func nextAction(now: Double) -> Reply {
        guard schedule.enable == 1 else { return ["type": -1] }
        let midnight = floor(now / 86_400) * 86_400
        let weekday = (Self.calendar.component(.weekday, from: Date(timeIntervalSince1970: now)) + 6) % 7  // 0 = Sunday
        var best: (at: Double, rule: Args, smin: Int)?
        for rule in schedule.rules where KasaJSON.int(rule["enable"]) == 1 && KasaJSON.int(rule["stime_opt"]) == 0 {
            guard let smin = KasaJSON.int(rule["smin"]), let wday = rule["wday"]?.arrayValue, wday.count == 7 else { continue }
            for offset in 0...7 where KasaJSON.int(wday[(weekday + offset) % 7]) == 1 {
                let at = midnight + Double(offset * 86_400 + smin * 60)
                if at > now {
                    if best == nil || at < best!.at { best = (at, rule, smin) }
                    break
                }
            }
        }
        guard let best else { return ["type": -1] }
        return [
            "type": 1, "id": best.rule["id"] ?? "", "schd_sec": .int(best.smin * 60), "action": .int(KasaJSON.int(best.rule["sact"]) ?? -1)
        ]
    }

    // MARK: - cnCloud, netif

    mutating func cloud(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        switch method {
        case "get_info":
            return [
                "username": "", "server": .string(cloudServer), "binded": 0, "cld_connection": 0, "illegalType": -1,
                "stopConnect": -1, "tcspStatus": -1, "fwDlPage": "", "tcspInfo": "", "fwNotifyType": 0
            ]
        case "get_intl_fw_list":
            return ["fw_list": []]
        case "set_server_url":
            guard let server = args["server"]?.stringValue, !server.isEmpty else { return Self.invalidArgument }
            cloudServer = server
            return [:]
        case "bind":
            guard args["username"]?.stringValue != nil, args["password"]?.stringValue != nil else { return Self.invalidArgument }
            return Self.error(-7, "failed to connect to the cloud server")  // the simulator is offline
        case "unbind":
            return [:]
        default:
            return nil
        }
    }

    mutating func netif(_ method: String, _ args: Args, _ now: Double) -> Reply? {
        switch method {
        case "get_stainfo":
            return ["ssid": "SimulatedWiFi", "key_type": 3, "rssi": -52]
        case "get_scaninfo":
            return ["ap_list": [["ssid": "SimulatedWiFi", "key_type": 3] as Reply]]
        default:
            return nil
        }
    }
}
