import Testing

@testable import HubDomain

@Suite struct DecideAnimalTests {
    @Test func admitNormalisesAndValidates() {
        var s = HubState()
        var form = admission("rex", beacon: " 1DE4B189-AA ")
        form.gender = ""
        form.breed = "  mixed "
        let events = run(.admitAnimal(form), &s)
        guard case .animalAdmitted(let a) = events.first else { Issue.record("no admission"); return }
        #expect(a.beacon == "1de4b189-aa")
        #expect(a.gender == nil)
        #expect(a.breed == "mixed")
        #expect(s.animals.beaconIndex["1de4b189-aa"] == "rex")
        #expect(s.animals.animal(withBeacon: "1DE4B189-AA")?.id == "rex")
        #expect(code(.admitAnimal(admission("rex", beacon: "other")), s) == "animal_already_admitted")
        #expect(code(.admitAnimal(admission("tom", beacon: "1de4b189-AA")), s) == "beacon_in_use")
        #expect(code(.admitAnimal(admission("bad id")), s) == "invalid_id")
        var f = admission("tom", beacon: "b2")
        f.name = " "
        #expect(code(.admitAnimal(f), s) == "missing_field")
        f = admission("tom", beacon: "b2"); f.species = ""
        #expect(code(.admitAnimal(f), s) == "missing_field")
        #expect(code(.admitAnimal(admission("tom", beacon: "")), s) == "missing_field")
        #expect(code(.admitAnimal(admission("tom", beacon: "b2", weight: 0)), s) == "weight_out_of_range")
        #expect(code(.admitAnimal(admission("tom", beacon: "b2", weight: 2000.5)), s) == "weight_out_of_range")
        #expect(code(.admitAnimal(admission("tom", beacon: "b2", weight: .nan)), s) == "weight_out_of_range")
        #expect(code(.admitAnimal(admission("tom", beacon: "b2", weight: 2000)), s) == nil)
        f = admission("tom", beacon: "b2"); f.birthDate = "2021-02-30"
        #expect(code(.admitAnimal(f), s) == "invalid_date")
    }

    @Test func dischargeAndReadmit() {
        var s = HubState()
        run(.admitAnimal(admission("rex", beacon: "B1")), &s)
        #expect(code(.dischargeAnimal(id: "nobody", exitWeightKg: 1, veterinarian: nil, observations: nil), s) == "unknown_animal")
        #expect(code(.dischargeAnimal(id: "rex", exitWeightKg: -1, veterinarian: nil, observations: nil), s) == "weight_out_of_range")
        #expect(
            run(.dischargeAnimal(id: "rex", exitWeightKg: 11.5, veterinarian: "Dr. Lee", observations: ""), &s) == [
                .animalDischarged(AnimalDischarged(animal: "rex", exitWeightKg: 11.5, veterinarian: "Dr. Lee", observations: nil))
            ])
        #expect(s.animals["rex"]?.status == .discharged)
        #expect(s.animals.beaconIndex["b1"] == nil)
        #expect(code(.dischargeAnimal(id: "rex", exitWeightKg: 11, veterinarian: nil, observations: nil), s) == "animal_not_admitted")
        #expect(code(.sightAnimal(id: "rex", room: "r", beacon: "b1", at: t0), s) == "animal_not_admitted")
        #expect(code(.recordReading(subject: .animal("rex"), quantity: .heartRate, value: 80, measuredAt: t0), s) == "animal_not_admitted")
        // Beacon is free again for another animal, and rex may come back with a new one.
        run(.admitAnimal(admission("tom", beacon: "b1")), &s)
        run(.admitAnimal(admission("rex", beacon: "b9")), &s)
        #expect(s.animals["rex"]?.admissions == 2)
        #expect(s.animals["rex"]?.status == .admitted)
        #expect(s.animals.beaconIndex == ["b1": "tom", "b9": "rex"])
    }

    @Test func sightings() {
        var s = HubState()
        run(.admitAnimal(admission("rex", beacon: "B1")), &s)
        #expect(code(.sightAnimal(id: "ghost", room: "r", beacon: "b1", at: t0), s) == "unknown_animal")
        #expect(code(.sightAnimal(id: "rex", room: " ", beacon: "b1", at: t0), s) == "missing_field")
        #expect(code(.sightAnimal(id: "rex", room: "ward", beacon: "b7", at: t0), s) == "beacon_mismatch")
        #expect(
            run(.sightAnimal(id: "rex", room: "ward", beacon: "B1", at: t0), &s) == [
                .animalSighted(AnimalSighted(animal: "rex", room: "ward", beacon: "b1", at: t0))
            ])
        #expect(run(.sightAnimal(id: "rex", room: "ward", beacon: "b1", at: t0 + 5), &s) == [])
        #expect(run(.sightAnimal(id: "rex", room: "yard", beacon: "b1", at: t0 + 9), &s).count == 1)
        #expect(s.animals["rex"]?.lastRoom == "yard")
        #expect(s.animals["rex"]?.lastSeenAt == t0 + 9)
    }

    @Test func vitals() {
        var s = HubState()
        run(.admitAnimal(admission("rex")), &s)
        run(.recordReading(subject: .animal("rex"), quantity: .heartRate, value: 92, measuredAt: t0), &s)
        run(.recordReading(subject: .animal("rex"), quantity: .temperature, value: 38.6, measuredAt: t0 + 1), &s)
        #expect(s.animals["rex"]?.heartRate == ReadingValue(value: 92, measuredAt: t0))
        #expect(s.animals["rex"]?.temperature == ReadingValue(value: 38.6, measuredAt: t0 + 1))
        #expect(code(.recordReading(subject: .animal("rex"), quantity: .heartRate, value: -3, measuredAt: t0), s) == "negative_value")
        #expect(code(.recordReading(subject: .animal("rex"), quantity: .power, value: 3, measuredAt: t0), s) == "quantity_not_applicable")
        #expect(code(.recordReading(subject: .animal("nobody"), quantity: .heartRate, value: 3, measuredAt: t0), s) == "unknown_animal")
    }
}
