import Testing

@testable import HubDomain

@Suite struct ActivationDivergenceTests {
    let lawn = Activation(name: "lawn", start: 1_795_370_400, lengthMinutes: 30, periodMinutes: 1440)
    let once = Activation(name: "once", start: 1_795_370_400, lengthMinutes: 10, periodMinutes: 0)

    func plugWith(_ list: [Activation]) -> HubState {
        var s = HubState()
        register("p", &s)
        for a in list {
            run(
                .setActivation(
                    device: "p", op: .add, name: a.name, start: a.start, lengthMinutes: Int(a.lengthMinutes),
                    periodMinutes: Int(a.periodMinutes)), &s)
        }
        return s
    }

    @Test func rolledForwardStartsAreTheSameSchedule() {
        var rolled = lawn
        rolled.start += 3 * 86_400
        #expect(lawn.sameSchedule(as: rolled))
        #expect(rolled.sameSchedule(as: lawn))
        var off = lawn
        off.start += 3600
        #expect(!lawn.sameSchedule(as: off))
        var movedOnce = once
        movedOnce.start += 600
        #expect(!once.sameSchedule(as: movedOnce))
        #expect(sameActivations([lawn, once], [once, rolled]))
        #expect(!sameActivations([lawn], [lawn, once]))
        #expect(!sameActivations([lawn, lawn], [lawn, once]))
    }

    @Test func matchingListDecidesNothing() {
        var s = plugWith([lawn, once])
        var rolled = lawn
        rolled.start += 86_400
        #expect(run(.reportActivations(device: "p", found: [once, rolled], policy: .restore), &s).isEmpty)
    }

    @Test func restoreRecordsTheDifferenceOnly() {
        var s = plugWith([lawn])
        let events = run(.reportActivations(device: "p", found: [once], policy: .restore), &s)
        #expect(events == [.activationsDiverged(ActivationsDiverged(device: "p", expected: [lawn], found: [once], resolution: .restore))])
        #expect(s.activations["p"] == [lawn])
        #expect(s.activations.unresolved["p"] == nil)
    }

    @Test func adoptBringsTheLogInLine() {
        var s = plugWith([lawn, once])
        var longer = lawn
        longer.lengthMinutes = 45
        let extra = Activation(name: "night", start: 1_795_400_000, lengthMinutes: 60, periodMinutes: 1440)
        let events = run(.reportActivations(device: "p", found: [longer, extra], policy: .adopt), &s)
        #expect(events.count == 4)
        #expect(
            events.first
                == .activationsDiverged(
                    ActivationsDiverged(
                        device: "p", expected: [lawn, once], found: [longer, extra],
                        resolution: .adopt)))
        #expect(sameActivations(s.activations["p"], [longer, extra]))
        // The next read-back of the same list is in line: nothing more.
        #expect(run(.reportActivations(device: "p", found: [longer, extra], policy: .adopt), &s).isEmpty)
    }

    @Test func adoptFallsBackToReportForListsTheLogCannotHold() {
        var s = plugWith([lawn])
        let dup = [once, once]
        let events = run(.reportActivations(device: "p", found: dup, policy: .adopt), &s)
        #expect(events == [.activationsDiverged(ActivationsDiverged(device: "p", expected: [lawn], found: dup, resolution: .report))])
        #expect(s.activations["p"] == [lawn])
        let bad = [Activation(name: "caf\u{E9}", start: 0, lengthMinutes: 1, periodMinutes: 0)]
        let badEvents = run(.reportActivations(device: "p", found: bad, policy: .adopt), &s)
        #expect(badEvents == [.activationsDiverged(ActivationsDiverged(device: "p", expected: [lawn], found: bad, resolution: .report))])
    }

    @Test func reportIsRecordedOnceUntilTheLogChanges() {
        var s = plugWith([lawn])
        #expect(run(.reportActivations(device: "p", found: [], policy: .report), &s).count == 1)
        #expect(s.activations.unresolved["p"]?.found == [])
        #expect(run(.reportActivations(device: "p", found: [], policy: .report), &s).isEmpty)
        #expect(run(.reportActivations(device: "p", found: [once], policy: .report), &s).count == 1)
        run(.setActivation(device: "p", op: .remove, name: "lawn", start: nil, lengthMinutes: nil, periodMinutes: nil), &s)
        #expect(s.activations.unresolved["p"] == nil)
    }

    @Test func unknownDeviceIsRejected() {
        #expect(code(.reportActivations(device: "nope", found: [], policy: .restore), HubState()) == "unknown_device")
    }
}
