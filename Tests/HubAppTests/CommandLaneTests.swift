import Synchronization
import Testing

@testable import HubMQTT

/// The rule of a command lane (`CommandLane`, `HeldCommands`): one entity's commands one after
/// another in arrival order, different entities' side by side, and at most so many held.
@Suite struct CommandLaneTests {
    @Test func oneEntitysCommandsWaitInOrderWhileOthersRun() {
        let held = HeldCommands<String, String>()
        #expect(held.take("lamp 1", on: "lamp"), "nothing runs on the lamp: run it")
        #expect(held.take("fan 1", on: "fan"), "another entity runs beside it")
        #expect(!held.take("lamp 2", on: "lamp"), "waits behind lamp 1")
        #expect(!held.take("lamp 3", on: "lamp"))
        #expect(held.finished("fan", below: 64) == nil, "nothing waits on the fan")
        #expect(held.take("fan 2", on: "fan"), "the fan is free again")
        #expect(held.finished("lamp", below: 64) == "lamp 2", "the lamp's next, in arrival order")
        #expect(held.finished("lamp", below: 64) == "lamp 3")
        #expect(held.finished("lamp", below: 64) == nil)
        #expect(held.take("lamp 4", on: "lamp"), "the lamp is free again")
    }

    @Test func theReaderWaitsForRoomWhileTheLimitIsHeld() async {
        let held = HeldCommands<Int, Int>()
        for i in 0..<4 { #expect(held.take(i, on: i)) }
        let passed = Passed()
        let reader = Task {
            await held.waitForRoom(below: 4)
            passed.flag.store(true, ordering: .sequentiallyConsistent)
        }
        for _ in 0..<100 { await Task.yield() }
        let early = passed.flag.load(ordering: .sequentiallyConsistent)
        #expect(!early, "four held: the reader waits")
        #expect(held.finished(0, below: 4) == nil)
        await reader.value
        let after = passed.flag.load(ordering: .sequentiallyConsistent)
        #expect(after, "one answered command made room")
        await held.waitForRoom(below: 4)  // three held: returns at once
    }
}

/// Whether the waiting reader got past its wait.
private final class Passed: Sendable {
    let flag = Atomic<Bool>(false)
}
