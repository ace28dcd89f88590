import DriverAPI
import DriverTestSupport
import Foundation
import Kasa
import KasaSimulator
import Testing

/// KLAP, the HTTP transport of Kasa firmware that closed TCP 9999: the session's cryptography
/// against another implementation's figures, and the driver against a KLAP plug simulator.
@Suite struct KasaKLAPTests {
    /// Figures python-kasa 0.12.0 (PyPI) computes with its `KlapTransportV2` and
    /// `KlapEncryptionSession` (`kasa/transports/klaptransport.py`) for the login
    /// `user@example.com` / `secret`, the local seed bytes 0...15 and the remote seed 16...31.
    @Test func sessionMatchesPythonKasa() throws {
        let login = KasaKLAPCredentials(username: "user@example.com", password: "secret")
        let local = Array(UInt8(0)..<16), remote = Array(UInt8(16)..<32)
        #expect(hex(login.authHash) == "b039216532fc844e9ae0cc8fe3ea911c9ba09c641bb96a3e1f776d93f7b5ae9b")
        #expect(
            hex(KasaKLAPSession.deviceProof(local: local, remote: remote, authHash: login.authHash))
                == "8ed3b905e654fbee23900d0244156a33029c025b71b03bfcc601eff33aaebb70")
        #expect(
            hex(KasaKLAPSession.clientProof(local: local, remote: remote, authHash: login.authHash))
                == "1e590e7a4dc128da48ed17e06fe23ddb6ec646bb6da2eb00708d590f194201d7")
        var session = KasaKLAPSession(local: local, remote: remote, authHash: login.authHash)
        #expect(session.sequence == -903_964_344)
        let first = try session.seal(Array(#"{"system":{"get_sysinfo":{}}}"#.utf8))
        #expect(first.sequence == -903_964_343)
        #expect(
            hex(first.body)
                == "ee33583262ebfd6b6977db181b8ba22a26f04b66d42c628224c0a40961942c64"
                + "b2ea7862e52efd2186b9d6c73afb86a8b9821180993deb7e55bf8d03b44290d9")
        #expect(
            String(decoding: try session.open(first.body, sequence: first.sequence), as: UTF8.self) == #"{"system":{"get_sysinfo":{}}}"#)
        #expect(session.isSigned(first.body, sequence: first.sequence))
        #expect(!session.isSigned(first.body, sequence: first.sequence + 1))
        let second = try session.seal(Array(#"{"system":{"set_relay_state":{"state":1}}}"#.utf8))
        #expect(second.sequence == -903_964_342)
        #expect(
            hex(second.body)
                == "08b07a7e6c7aee1d6260227cab046c897333e54cf714ae8c44abdef5faa892b5"
                + "6a65fa977f2276afbb3eb2af028855473ce7a4a884e8fc0220cf36989e9e171e"
                + "e1359bc872ec56addc714c69db3188c9")
        #expect(throws: KasaProtocolError.self) { try session.open(Array(first.body.prefix(40)), sequence: first.sequence) }
    }

    @Test func aKLAPPlugSwitchesAndMetersWithTheLogin() async throws {
        let login = try credentialsFile(#"{"username":"user@example.com","password":"secret"}"#)
        let sim = try await klapSimulator()
        let port = try await sim.start()
        let driver = try makeDriver(port: port, extra: #","credentials_file":"\#(login)""#)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        await context.wait { $0.lastAvailability?.0 == true && $0.readings(.power).count >= 2 }
        #expect(await context.observations.lastAvailability?.1.contains("HS110(EU)") == true)
        try await driver.execute(.setSwitch(on: true))
        #expect(sim.relayOn)
        await context.wait { $0.readings(.power).last.map { abs($0 - 60) < 2 } == true }
        #expect(sim.klapHandshakes == 1)  // one session serves every poll and the switch
        #expect(sim.klapRefusals == 0)

        // The plug restarts and forgets the session: the next request gets 403, a new handshake follows.
        sim.expireKLAPSessions()
        sim.relayOn = false
        await context.wait { $0.stateChanges == [false, true, false] }
        #expect(sim.klapHandshakes == 2)
        #expect(await context.observations.availabilities.map(\.0) == [true])
        await running.stop()
        await sim.stop()
    }

    @Test func aWrongLoginIsSaidAndNotRetriedInALoop() async throws {
        let login = try credentialsFile(#"{"username":"user@example.com","password":"Secret"}"#)
        let sim = try await klapSimulator()
        let port = try await sim.start()
        let driver = try makeDriver(port: port, extra: #","credentials_file":"\#(login)""#)
        let context = CollectingContext()
        let running = await Running(driver, context: context)
        await context.wait { $0.availabilities.count == 1 }
        let reason = await context.observations.availabilities.first
        #expect(reason?.0 == false)
        #expect(
            reason?.1 == "127.0.0.1:\(port) did not accept the TP-Link login of the credentials file (KLAP handshake1): "
                + "check the e-mail and password (both case-sensitive) the Kasa app signs in with")
        await #expect(throws: DriverError.self) { try await driver.execute(.setSwitch(on: true)) }
        #expect(!sim.relayOn)
        #expect(sim.klapHandshakes <= 3)  // one per poll (backing off), none retried within a poll
        await running.stop()
        await sim.stop()
    }

    @Test func aCredentialsFileThatIsMissingOrWrongIsRefusedAtRegistration() throws {
        let factory = KasaDriverFactory()
        func make(_ path: String) throws -> any Driver {
            try factory.make(
                configuration: DriverConfiguration(
                    deviceId: "p1", driver: "kasa", settingsJSON: #"{"host":"10.0.0.5","credentials_file":"\#(path)"}"#))
        }
        let missing = NSTemporaryDirectory() + "no-such-login-\(UUID().uuidString).json"
        #expect {
            try make(missing)
        } throws: { error in
            "\(error)".contains("kasa credentials_file \"\(missing)\" of device \"p1\" cannot be read")
        }
        let notALogin = try credentialsFile(#"["user@example.com","secret"]"#)
        #expect {
            try make(notALogin)
        } throws: { error in
            "\(error)".contains(#"must hold a JSON object {"username": "...", "password": "..."}"#) && !"\(error)".contains("secret")
        }
    }

    /// A KLAP plug on an ephemeral port that accepts `user@example.com` / `secret`.
    private func klapSimulator() async throws -> KasaSimulator {
        var options = KasaSimulator.Options(port: 0)
        options.klap = KasaKLAPCredentials(username: "user@example.com", password: "secret")
        return KasaSimulator(options: options)
    }

    private func credentialsFile(_ json: String) throws -> String {
        let path = NSTemporaryDirectory() + "kasa-login-\(UUID().uuidString).json"
        try json.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
