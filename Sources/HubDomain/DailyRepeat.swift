/// "Every day at 18:00 local time" (optionally only on chosen weekdays) in a named time zone, so an
/// activation does not drift across daylight-saving changes the way a fixed 1440-minute period does.
public struct DailyRepeat: Sendable, Equatable, Hashable, Codable {
    /// Minutes after local midnight, 0...1439.
    public var minuteOfDay: UInt16
    /// Bit 0 = Monday ... bit 6 = Sunday; 0x7F = every day. Never 0.
    public var weekdays: UInt8
    /// An IANA time zone name, e.g. "Europe/Lisbon" (validated by the runtime, which has the tz database).
    public var timeZone: String

    /// A rule; `weekdays` defaults to every day and must not be 0.
    public init(minuteOfDay: UInt16, weekdays: UInt8 = DailyRepeat.everyDay, timeZone: String) {
        self.minuteOfDay = minuteOfDay
        self.weekdays = weekdays
        self.timeZone = timeZone
    }

    /// The weekday mask for every day (bits 0 to 6 set).
    public static let everyDay: UInt8 = 0x7F
    /// Day names in mask bit order, Monday first: the names `weekdays(of:)` reads and `dayList` writes.
    public static let dayNames = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]

    /// Whether the rule runs on ISO weekday `day` (1 = Monday ... 7 = Sunday).
    public func runs(onISOWeekday day: Int) -> Bool {
        (1...7).contains(day) && weekdays & (1 << UInt8(day - 1)) != 0
    }

    /// "18:00".
    public var timeText: String {
        let h = Int(minuteOfDay) / 60, m = Int(minuteOfDay) % 60
        return (h < 10 ? "0" : "") + "\(h):" + (m < 10 ? "0" : "") + "\(m)"
    }

    /// ["mon", "wed"].
    public var dayList: [String] {
        (0..<7).filter { weekdays & (1 << UInt8($0)) != 0 }.map { Self.dayNames[$0] }
    }

    /// Parses "HH:MM" (00:00 to 23:59).
    public static func minute(of text: String) -> UInt16? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 2, parts[1].count == 2,
            let h = UInt16(parts[0]), let m = UInt16(parts[1]), h < 24, m < 60
        else { return nil }
        return h * 60 + m
    }

    /// Parses day names ("mon"..."sun", case-insensitive) into the bit mask; nil on an unknown name or an empty list.
    public static func weekdays(of names: [String]) -> UInt8? {
        var mask: UInt8 = 0
        for name in names {
            guard let i = dayNames.firstIndex(of: name.lowercased()) else { return nil }
            mask |= 1 << UInt8(i)
        }
        return mask == 0 ? nil : mask
    }
}

extension DailyRepeat {
    /// `{"at":"18:00","days":["mon","tue",...],"time_zone":"Europe/Lisbon"}`.
    public var jsonValue: JSONValue {
        .object([("at", .string(timeText)), ("days", .array(dayList.map { .string($0) })), ("time_zone", .string(timeZone))])
    }
}

extension JSONFieldReader {
    /// An optional `repeat` object (absent or null: none).
    func dailyRepeat(_ field: String) throws(DecodingFailure) -> DailyRepeat? {
        guard let v = body[field], v != .null else { return nil }
        guard case .object = v else { throw failure(field, "expected an object {\"at\",\"days\",\"time_zone\"} or null") }
        let r = JSONFieldReader(body: v, type: type, schemaVersion: schemaVersion, prefix: prefix + field + ".")
        let at = try r.string("at")
        guard let minute = DailyRepeat.minute(of: at) else { throw r.failure("at", "expected HH:MM, got \"\(at)\"") }
        guard case .array(let items) = try r.value("days") else { throw r.failure("days", "expected a list of day names") }
        var names: [String] = []
        for item in items {
            guard case .string(let s) = item else { throw r.failure("days", "expected day names (mon...sun)") }
            names.append(s)
        }
        guard let mask = DailyRepeat.weekdays(of: names) else {
            throw r.failure("days", "expected one or more of mon, tue, wed, thu, fri, sat, sun")
        }
        return DailyRepeat(minuteOfDay: minute, weekdays: mask, timeZone: try r.string("time_zone"))
    }
}

/// Names shared by the scheduler and the read models.
public enum Scheduling {
    /// The actor recorded on the scheduler's commands.
    public static let actor = "scheduler"
}
