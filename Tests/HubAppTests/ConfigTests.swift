import HubDomain
import Testing

@testable import HubApp
@testable import HubEngine
@testable import HubHTTP
@testable import HubHistory
@testable import HubLog
@testable import HubMQTT

@Suite struct ConfigTests {
    func parse(_ text: String) throws -> HubConfig {
        try HubConfig.parse(try JSONValue.parse(Array(text.utf8)))
    }

    func problem(_ text: String) -> String {
        do { _ = try parse(text); return "no problem" } catch { return "\(error)" }
    }

    @Test func divergencePolicyAndReadingRules() throws {
        let c = try parse(#"{"activation_divergence":"adopt","readings":{"power":{"deadband":5},"energy":{"max_interval_seconds":900}}}"#)
        #expect(c.activationDivergence == .adopt)
        #expect(c.readingRules[.power] == ReadingFilter.Rule(deadband: 5, relative: 0.02, maxIntervalSeconds: 300))
        #expect(c.readingRules[.energy] == ReadingFilter.Rule(deadband: 10, maxIntervalSeconds: 900))
        #expect(c.driverHostOptions.divergencePolicy == .adopt)
        #expect(try parse("{}").activationDivergence == .restore)
    }

    @Test func badValuesNameTheKey() {
        #expect(
            problem(#"{"activation_divergence":"ignore"}"#).contains(
                "activation_divergence must be \"restore\", \"adopt\" or \"report\", not \"ignore\""))
        #expect(problem(#"{"readings":{"watts":{}}}"#).contains("unknown key readings.watts"))
        #expect(problem(#"{"readings":{"power":{"deadband":-1}}}"#).contains("readings.power.deadband"))
        #expect(problem(#"{"readings":{"power":{"max_interval_seconds":0}}}"#).contains("readings.power.max_interval_seconds"))
        #expect(problem(#"{"readings":{"power":{"every":3}}}"#).contains("unknown key readings.power.every"))
        #expect(problem(#"{"time_zone":"Mars/Olympus"}"#).contains("time_zone \"Mars/Olympus\" is not a time zone this machine knows"))
        #expect(problem(#"{"time_zone":1}"#).contains("time_zone"))
    }

    @Test func theAuditHeadInterval() throws {
        #expect(try parse("{}").auditHeadSeconds == 300)
        #expect(try parse(#"{"audit_head_seconds":60}"#).auditHeadSeconds == 60)
        #expect(problem(#"{"audit_head_seconds":0}"#).contains("audit_head_seconds"))
        #expect(problem(#"{"audit_head_seconds":"often"}"#).contains("audit_head_seconds"))
    }

    /// Unset, the observations' delay follows the data directory's disk: 300 s on an SD card or
    /// eMMC (the kernel's MMC driver), 10 s on any other; a value set is kept.
    @Test func theObservationDelayFollowsTheDisk() throws {
        let card = StorageDevice(name: "mmcblk0p2", sysPath: "/sys/dev/block/179:2")
        #expect(card.isMemoryCard)
        #expect(HubConfig.defaultObservationCommitDelaySeconds(on: card) == 300)
        #expect(HubConfig.defaultObservationCommitDelaySeconds(on: StorageDevice(name: "sda1", sysPath: "/sys/dev/block/8:1")) == 10)
        #expect(HubConfig.defaultObservationCommitDelaySeconds(on: nil) == 10, "tmpfs, overlay, a network file system")
        #expect(try parse("{}").observationCommitDelaySeconds == nil)
        #expect(try parse(#"{"observation_commit_delay_seconds":60}"#).observationCommitDelay(dataDirectory: "/nowhere") == .seconds(60))
        #expect(problem(#"{"observation_commit_delay_seconds":301}"#).contains("observation_commit_delay_seconds"))
        // This machine's disk, named as the kernel names it; a data directory not made yet is on its parent's.
        let dir = temporaryDirectory()
        let here = try StorageDevice.holding(dir).get()
        #expect(try StorageDevice.holding(dir + "/data/not/made/yet").get() == here)
        #expect(HubConfig().observationCommitDelay(dataDirectory: dir + "/data") == .seconds(here.isMemoryCard ? 300 : 10), "\(here)")
    }

    @Test func theHouseholdsTimeZone() throws {
        #expect(try parse(#"{"time_zone":"Europe/Lisbon"}"#).timeZone == "Europe/Lisbon")
        #expect(try parse("{}").timeZone == nil)
    }
}
