import DriverAPI
import Foundation
import Kasa
import KasaSimulator
import Testing

/// The simulator over real TCP, queried by a plain POSIX client.
@Suite struct SimulatorTests {
    static func int(_ value: JSONValue?) -> Int? { value?.doubleValue.map { Int($0) } }
    static func sub(_ reply: JSONValue, _ module: String, _ method: String) -> JSONValue {
        reply[module]?[method] ?? [:]
    }

    func withSimulator(
        _ firmware: KasaSimulator.Firmware = .new, clock: TestClock? = nil,
        _ body: (KasaSimulator, BlockingClient) async throws -> Void
    ) async throws {
        let sim = KasaSimulator(options: .init(port: 0, firmware: firmware), clock: clock?.read)
        let port = try await sim.start()
        do {
            try await body(sim, try BlockingClient(port: port))
        } catch {
            await sim.stop()
            throw error
        }
        await sim.stop()
    }

    @Test(arguments: KasaSimulator.Firmware.allCases)
    func sysinfoHasTheHS110Fields(firmware: KasaSimulator.Firmware) async throws {
        try await withSimulator(firmware) { sim, client in
            let reply = try client.request(#"{"system":{"get_sysinfo":null}}"#)
            let info = Self.sub(reply, "system", "get_sysinfo")
            for key in [
                "sw_ver", "hw_ver", "type", "model", "mac", "deviceId", "hwId", "fwId", "oemId", "alias", "dev_name",
                "icon_hash", "relay_state", "on_time", "active_mode", "feature", "updating", "rssi", "led_off", "err_code"
            ] {
                #expect(info[key] != nil, "missing \(key)")
            }
            #expect(info[firmware == .new ? "latitude_i" : "latitude"] != nil)
            #expect(info["model"]?.stringValue == "HS110(EU)")
            #expect(info["type"]?.stringValue == "IOT.SMARTPLUGSWITCH")
            #expect(info["feature"]?.stringValue == "TIM:ENE")
            #expect(info["alias"]?.stringValue == "Kasa Plug")
            #expect(Self.int(info["err_code"]) == 0 && Self.int(info["relay_state"]) == 0)
            #expect(sim.requestCount == 1)
        }
    }

    @Test func systemMethods() async throws {
        try await withSimulator { sim, client in
            var r = try client.request(#"{"system":{"set_relay_state":{"state":1}}}"#)
            #expect(Self.int(Self.sub(r, "system", "set_relay_state")["err_code"]) == 0)
            #expect(sim.relayOn)
            r = try client.request(#"{"system":{"set_relay_state":{"state":"on"}}}"#)
            #expect(Self.int(Self.sub(r, "system", "set_relay_state")["err_code"]) == -3)
            sim.relayOn = false  // the button
            r = try client.request(#"{"system":{"get_sysinfo":{}}}"#)
            #expect(Self.int(Self.sub(r, "system", "get_sysinfo")["relay_state"]) == 0)
            r = try client.request(#"{"system":{"set_led_off":{"off":1},"set_dev_alias":{"alias":"Desk"}}}"#)
            #expect(Self.int(Self.sub(r, "system", "set_led_off")["err_code"]) == 0)
            #expect(Self.int(Self.sub(r, "system", "set_dev_alias")["err_code"]) == 0)
            r = try client.request(#"{"system":{"get_sysinfo":{}}}"#)
            #expect(Self.sub(r, "system", "get_sysinfo")["alias"]?.stringValue == "Desk")
            #expect(Self.int(Self.sub(r, "system", "get_sysinfo")["led_off"]) == 1)
            r = try client.request(#"{"system":{"set_dev_alias":{"alias":"\#(String(repeating: "x", count: 40))"},"reboot":{"delay":1}}}"#)
            #expect(Self.int(Self.sub(r, "system", "set_dev_alias")["err_code"]) == -3)
            #expect(Self.int(Self.sub(r, "system", "reboot")["err_code"]) == 0)
        }
    }

    @Test func unknownModuleAndMethodAndBatching() async throws {
        try await withSimulator { _, client in
            let r = try client.request(
                #"{"foo":{"bar":{}},"system":{"frobnicate":{},"get_sysinfo":{}},"time":{"get_time":{},"get_timezone":{}},"cnCloud":{"get_info":{}},"anti_theft":{"get_rules":{}}}"#
            )
            #expect(Self.int(r["foo"]?["err_code"]) == -1)
            #expect(r["foo"]?["err_msg"]?.stringValue == "module not support")
            #expect(Self.int(Self.sub(r, "system", "frobnicate")["err_code"]) == -2)
            #expect(Self.sub(r, "system", "frobnicate")["err_msg"]?.stringValue == "member not support")
            #expect(Self.int(Self.sub(r, "system", "get_sysinfo")["err_code"]) == 0)
            #expect(Self.int(Self.sub(r, "time", "get_timezone")["index"]) != nil)
            let cloud = Self.sub(r, "cnCloud", "get_info")
            for key in ["binded", "cld_connection", "server", "username", "err_code"] { #expect(cloud[key] != nil, "\(key)") }
            #expect(Self.sub(r, "anti_theft", "get_rules")["rule_list"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func timeFollowsTheClock() async throws {
        let clock = TestClock(1_700_000_000)  // 2023-11-14 22:13:20 UTC
        try await withSimulator(clock: clock) { _, client in
            let t = Self.sub(try client.request(#"{"time":{"get_time":{}}}"#), "time", "get_time")
            #expect([t["year"], t["month"], t["mday"], t["hour"], t["min"], t["sec"]].map { Self.int($0) } == [2023, 11, 14, 22, 13, 20])
        }
    }

    @Test(arguments: KasaSimulator.Firmware.allCases)
    func emeterAndStatistics(firmware: KasaSimulator.Firmware) async throws {
        let clock = TestClock(1_700_000_000)
        try await withSimulator(firmware, clock: clock) { sim, client in
            var rt = Self.sub(try client.request(#"{"emeter":{"get_realtime":{}}}"#), "emeter", "get_realtime")
            let keys = firmware == .new ? ["current_ma", "voltage_mv", "power_mw", "total_wh"] : ["current", "voltage", "power", "total"]
            for key in keys { #expect(rt[key] != nil, "\(key)") }
            sim.relayOn = true
            clock.advance(2 * 86_400)  // two days at 60 W = 2880 Wh
            #expect(abs(sim.energyTotalWh - 2880) < 1e-6)
            rt = Self.sub(try client.request(#"{"emeter":{"get_realtime":{}}}"#), "emeter", "get_realtime")
            if firmware == .new {
                #expect(Self.int(rt["total_wh"]) == 2880)
                #expect(abs(Double(Self.int(rt["power_mw"]) ?? 0) - 60_000) < 2_000)
            } else {
                #expect(abs((rt["total"]?.doubleValue ?? 0) - 2.88) < 1e-9)
                #expect(abs((rt["power"]?.doubleValue ?? 0) - 60) < 2)
            }
            let r = try client.request(#"{"emeter":{"get_daystat":{"month":11,"year":2023},"get_monthstat":{"year":2023}}}"#)
            let days = Self.sub(r, "emeter", "get_daystat")["day_list"]?.arrayValue ?? []
            #expect(days.map { Self.int($0["day"]) } == [14, 15, 16])
            let energyKey = firmware == .new ? "energy_wh" : "energy"
            let dayTotal = days.compactMap { $0[energyKey]?.doubleValue }.reduce(0, +)
            #expect(abs(dayTotal - (firmware == .new ? 2880 : 2.88)) < 0.01)
            let months = Self.sub(r, "emeter", "get_monthstat")["month_list"]?.arrayValue ?? []
            #expect(months.count == 1 && Self.int(months.first?["month"]) == 11)
            let bad = try client.request(#"{"emeter":{"get_daystat":{"year":2023}}}"#)
            #expect(Self.int(Self.sub(bad, "emeter", "get_daystat")["err_code"]) == -3)
            let erased = try client.request(#"{"emeter":{"erase_emeter_stat":null,"get_vgain_igain":{}}}"#)
            #expect(Self.int(Self.sub(erased, "emeter", "erase_emeter_stat")["err_code"]) == 0)
            #expect(sim.energyTotalWh == 0)
            let runtime = try client.request(#"{"schedule":{"get_daystat":{"month":11,"year":2023},"get_monthstat":{"year":2023}}}"#)
            let runDays = Self.sub(runtime, "schedule", "get_daystat")["day_list"]?.arrayValue ?? []
            #expect(runDays.compactMap { Self.int($0["time"]) }.reduce(0, +) == 2 * 24 * 60)
        }
    }

    @Test func scheduleRules() async throws {
        let clock = TestClock(1_700_000_000)  // a Tuesday, 22:13 UTC
        try await withSimulator(clock: clock) { _, client in
            let add =
                #"{"schedule":{"add_rule":{"stime_opt":0,"wday":[1,1,1,1,1,1,1],"smin":1380,"enable":1,"repeat":1,"etime_opt":-1,"name":"night off","eact":-1,"sact":0,"emin":0}}}"#
            var r = try client.request(add)
            let id = Self.sub(r, "schedule", "add_rule")["id"]?.stringValue
            #expect(id?.count == 32)
            r = try client.request(#"{"schedule":{"get_rules":{},"get_next_action":{}}}"#)
            let rules = Self.sub(r, "schedule", "get_rules")
            #expect(rules["rule_list"]?.arrayValue?.first?["id"]?.stringValue == id)
            #expect(Self.int(rules["enable"]) == 1 && Self.int(rules["version"]) != nil)
            let next = Self.sub(r, "schedule", "get_next_action")
            #expect(Self.int(next["type"]) == 1 && Self.int(next["schd_sec"]) == 1380 * 60 && Self.int(next["action"]) == 0)
            r = try client.request(
                #"{"schedule":{"edit_rule":{"id":"\#(id ?? "")","stime_opt":0,"wday":[1,1,1,1,1,1,1],"smin":60,"enable":0,"repeat":1,"sact":1}}}"#
            )
            #expect(Self.int(Self.sub(r, "schedule", "edit_rule")["err_code"]) == 0)
            r = try client.request(
                #"{"schedule":{"edit_rule":{"id":"NOPE","stime_opt":0,"wday":[1,1,1,1,1,1,1],"smin":60,"enable":0,"sact":1}}}"#)
            #expect(Self.int(Self.sub(r, "schedule", "edit_rule")["err_code"]) ?? 0 < 0)
            r = try client.request(#"{"schedule":{"add_rule":{"stime_opt":0,"wday":[1,1],"smin":99999,"enable":1,"sact":1}}}"#)
            #expect(Self.int(Self.sub(r, "schedule", "add_rule")["err_code"]) == -3)
            r = try client.request(#"{"schedule":{"delete_rule":{"id":"\#(id ?? "")"}}}"#)
            #expect(Self.int(Self.sub(r, "schedule", "delete_rule")["err_code"]) == 0)
            r = try client.request(#"{"schedule":{"delete_rule":{"id":"\#(id ?? "")"},"delete_all_rules":{},"get_next_action":{}}}"#)
            #expect(Self.int(Self.sub(r, "schedule", "delete_rule")["err_code"]) ?? 0 < 0)
            #expect(Self.int(Self.sub(r, "schedule", "delete_all_rules")["err_code"]) == 0)
            #expect(Self.int(Self.sub(r, "schedule", "get_next_action")["type"]) == -1)
            // Some clients send wday as booleans; they are kept as sent.
            r = try client.request(
                #"{"schedule":{"add_rule":{"stime_opt":0,"wday":[true,false,false,false,false,false,true],"smin":600,"enable":1,"repeat":true,"sact":1}}}"#
            )
            #expect(Self.int(Self.sub(r, "schedule", "add_rule")["err_code"]) == 0)
            let raw = try client.rawRequest(#"{"schedule":{"get_rules":{}}}"#)
            #expect(raw.contains("[true,false,false,false,false,false,true]"), "\(raw)")
        }
    }

    @Test func countdownHasOneRuleAndFires() async throws {
        let clock = TestClock()
        try await withSimulator(clock: clock) { sim, client in
            var r = try client.request(#"{"count_down":{"add_rule":{"enable":1,"delay":1800,"act":1,"name":"x"}}}"#)
            let id = Self.sub(r, "count_down", "add_rule")["id"]?.stringValue
            #expect(id != nil)
            r = try client.request(#"{"count_down":{"add_rule":{"enable":1,"delay":60,"act":0,"name":"y"}}}"#)
            #expect(Self.int(Self.sub(r, "count_down", "add_rule")["err_code"]) ?? 0 < 0)
            r = try client.request(#"{"count_down":{"get_rules":{}},"system":{"get_sysinfo":{}}}"#)
            #expect(Self.sub(r, "count_down", "get_rules")["rule_list"]?.arrayValue?.count == 1)
            #expect(Self.sub(r, "system", "get_sysinfo")["active_mode"]?.stringValue == "count_down")
            clock.advance(1801)
            #expect(sim.relayOn)
            r = try client.request(#"{"count_down":{"edit_rule":{"id":"\#(id ?? "")","enable":1,"delay":10,"act":0,"name":"x"}}}"#)
            #expect(Self.int(Self.sub(r, "count_down", "edit_rule")["err_code"]) == 0)
            clock.advance(11)
            #expect(!sim.relayOn)
            r = try client.request(#"{"count_down":{"delete_rule":{"id":"\#(id ?? "")"}}}"#)
            #expect(Self.int(Self.sub(r, "count_down", "delete_rule")["err_code"]) == 0)
            r = try client.request(#"{"count_down":{"delete_all_rules":{},"get_rules":{}}}"#)
            #expect(Self.sub(r, "count_down", "get_rules")["rule_list"]?.arrayValue?.isEmpty == true)
        }
    }

    @Test func connectionsAreKeptAndServedInOrder() async throws {
        try await withSimulator { sim, first in
            let second = try BlockingClient(port: Int(sim.options.port == 0 ? try await portOf(first) : sim.options.port))
            // Pipelined: three requests written at once come back in order on one connection.
            try first.sendRaw(
                KasaCipher.frame(#"{"system":{"set_relay_state":{"state":1}}}"#)
                    + KasaCipher.frame(#"{"system":{"get_sysinfo":{}}}"#)
                    + KasaCipher.frame(#"{"system":{"set_relay_state":{"state":0}}}"#))
            #expect(readFrame(first.fd).map { String(decoding: $0, as: UTF8.self).contains("set_relay_state") } == true)
            let info = try JSONValue.parse(readFrame(first.fd) ?? [])
            #expect(Self.int(Self.sub(info, "system", "get_sysinfo")["relay_state"]) == 1)
            #expect(readFrame(first.fd) != nil)
            _ = try second.request(#"{"system":{"get_sysinfo":{}}}"#)
            #expect(sim.requestCount == 4)
            // Not JSON: the plug hangs up.
            try second.sendRaw(KasaCipher.frame("not json"))
            #expect(second.peerClosed())
        }
    }

    /// The simulator's port as the client sees it.
    func portOf(_ client: BlockingClient) async throws -> Int {
        var addr = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(client.fd, $0, &len) }
        }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
