import DriverAPI
import DriverTestSupport
import Foundation
import Kasa
import Testing

/// The driver against misbehaving peers (plain socket servers written here): it must report the
/// plug unavailable with a reason, stay bounded, and never crash.
@Suite struct HostilePeerTests {
    func run(_ peer: ScriptedPeer, extra: String = "", _ check: (CollectingContext, any Driver) async throws -> Void) async throws {
        let driver = try makeDriver(port: peer.port, extra: extra)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        try await check(context, driver)
        await running.stop()
        peer.stop()
    }

    @Test func randomBytes() async throws {
        let peer = ScriptedPeer.answering { _ in (0..<2000).map { _ in UInt8.random(in: 0...255) } }
        try await run(peer) { context, _ in
            await context.wait { $0.lastAvailability?.0 == false }
        }
    }

    @Test func twoGigabyteHeader() async throws {
        let peer = ScriptedPeer.answering { _ in [0x80, 0, 0, 0] + Array(repeating: 0x41, count: 100) }
        try await run(peer) { context, _ in
            await context.wait { $0.lastAvailability?.0 == false }
            #expect(await context.observations.lastAvailability?.1 == "plug sent a frame of 2147483648 bytes (limit 65536)")
        }
    }

    @Test func notJSON() async throws {
        let peer = ScriptedPeer.answering { _ in KasaCipher.frame("hello, I am not a plug") }
        try await run(peer) { context, _ in
            await context.wait { $0.lastAvailability?.0 == false }
            #expect(await context.observations.lastAvailability?.1 == "reply is not JSON: hello, I am not a plug")
        }
    }

    @Test func acceptsAndNeverAnswers() async throws {
        let peer = ScriptedPeer.answering { _ in nil }
        let started = Date()
        try await run(peer, extra: #","timeout":0.3,"retries":2,"retry_backoff":0.1"#) { context, driver in
            await context.wait { $0.lastAvailability?.0 == false }
            #expect(Date().timeIntervalSince(started) > 0.9)  // 3 attempts of 0.3 s + 2 back-offs
            #expect(await context.observations.lastAvailability?.1 == "no answer within 0.3 s (2 retries)")
            await #expect(throws: DriverError.self) { try await driver.execute(.setSwitch(on: true)) }
        }
    }

    @Test func slowTrickledReplyStillWorks() async throws {
        let reply = KasaCipher.frame(#"{"system":{"get_sysinfo":{"relay_state":1,"feature":"TIM","model":"HS100(EU)","err_code":0}}}"#)
        let peer = ScriptedPeer { fd in
            while readFrame(fd) != nil {
                for byte in reply {
                    guard writeAll(fd, [byte]) else { return }
                    usleep(5_000)
                }
            }
        }
        try await run(peer, extra: #","timeout":5,"poll_interval":5"#) { context, _ in
            await context.wait { $0.lastAvailability?.0 == true && $0.switchStates == [true] }
            #expect(await context.observations.readings(.power).isEmpty)  // no "ENE" feature: no emeter
        }
    }

    @Test func emeterErrorMeansNoReadingsButAvailable() async throws {
        let peer = ScriptedPeer.answering { request in
            var reply = #""system":{"get_sysinfo":{"relay_state":0,"feature":"TIM:ENE","err_code":0}}"#
            if request.contains("emeter") { reply += #","emeter":{"get_realtime":{"err_code":-1,"err_msg":"module not support"}}"# }
            return KasaCipher.frame("{\(reply)}")
        }
        try await run(peer) { context, _ in
            await context.wait { $0.lastAvailability?.0 == true && $0.switchStates == [false] }
            try await Task.sleep(nanoseconds: 600_000_000)
            #expect(await context.observations.readings(.power).isEmpty)
            #expect(await context.observations.availabilities.count == 1)
        }
    }

    @Test func sysinfoErrorCodeIsUnavailableAndSetErrorThrows() async throws {
        let peer = ScriptedPeer.answering { request in
            if request.contains("set_relay_state") {
                return KasaCipher.frame(#"{"system":{"set_relay_state":{"err_code":-3,"err_msg":"invalid argument"}}}"#)
            }
            return KasaCipher.frame(#"{"system":{"get_sysinfo":{"relay_state":0,"feature":"TIM","err_code":0}}}"#)
        }
        try await run(peer) { context, driver in
            await context.wait { $0.lastAvailability?.0 == true }
            do {
                try await driver.execute(.setSwitch(on: true))
                Issue.record("expected an error")
            } catch let error as DriverError {
                #expect(error.message.contains("invalid argument") && error.message.contains("-3"), "\(error.message)")
            }
        }
        let failing = ScriptedPeer.answering { _ in KasaCipher.frame(#"{"system":{"err_code":-1,"err_msg":"module not support"}}"#) }
        try await run(failing) { context, _ in
            await context.wait { $0.lastAvailability?.0 == false }
            #expect(await context.observations.lastAvailability?.1.contains("module not support") == true)
        }
    }
}
