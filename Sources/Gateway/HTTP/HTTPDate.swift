import Foundation

/// HTTP dates (RFC 9110 5.6.7) read by hand: `Sun, 06 Nov 1994 08:49:37 GMT` (IMF-fixdate), and
/// the two obsolete forms a recipient must also read, RFC 850 (`Sunday, 06-Nov-94 08:49:37 GMT`)
/// and asctime (`Sun Nov  6 08:49:37 1994`). A value is read per live MPD answer and per
/// conditional request; a `DateFormatter` per form and call cost more than the rest of such a
/// request, and one shared between threads is not safe.
enum HTTPDate {
    /// Seconds since 1970 (UTC), or nil for anything that is not one of the three forms.
    static func seconds(_ text: some StringProtocol, now: Double = Date().timeIntervalSince1970) -> Double? {
        var r = Reader(Array(text.utf8))
        r.skipSpaces()
        guard let weekday = r.word(), r.skipSpaces() || r.peek == UInt8(ascii: ",") else { return nil }
        let result: Int64?
        if r.eat(UInt8(ascii: ",")) {
            r.skipSpaces()
            if shortDays.contains(weekday) {
                // IMF-fixdate: DD SP Mon SP YYYY SP HH:MM:SS SP GMT
                guard let day = r.digits(2), r.eat(space), let month = r.month(), r.eat(space), let year = r.digits(4), r.eat(space),
                    let time = r.time(), r.eat(space), r.literal("GMT")
                else { return nil }
                result = epoch(year: year, month: month, day: day, time: time)
            } else if longDays.contains(weekday) {
                // RFC 850: DD-Mon-YY SP HH:MM:SS SP GMT
                guard let day = r.digits(2), r.eat(dash), let month = r.month(), r.eat(dash), let yy = r.digits(2), r.eat(space),
                    let time = r.time(), r.eat(space), r.literal("GMT")
                else { return nil }
                // A two-digit year more than 50 years ahead is the last such year past (RFC 9110).
                let ahead = epoch(year: 2000 + yy, month: month, day: day, time: time)
                result = ahead.map { Double($0) > now + 50 * 365.2425 * 86400 } == true
                    ? epoch(year: 1900 + yy, month: month, day: day, time: time) : ahead
            } else {
                return nil
            }
        } else {
            // asctime: Wkd SP Mon SP (D or DD, space-padded) SP HH:MM:SS SP YYYY
            guard shortDays.contains(weekday), let month = r.month(), r.eat(space) else { return nil }
            _ = r.eat(space)
            guard let day = r.digits(2) ?? r.digits(1), r.eat(space), let time = r.time(), r.eat(space), let year = r.digits(4) else { return nil }
            result = epoch(year: year, month: month, day: day, time: time)
        }
        r.skipSpaces()
        guard r.atEnd, let result else { return nil }
        return Double(result)
    }

    private static let space = UInt8(ascii: " "), dash = UInt8(ascii: "-"), colon = UInt8(ascii: ":")
    private static let shortDays: Set<String> = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDays: Set<String> = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Seconds since 1970 of a valid date and time; nil for a day the month does not have, or
    /// an hour, minute or second out of range (60 is a leap second).
    static func epoch(year: Int, month: Int, day: Int, time: (h: Int, m: Int, s: Int)) -> Int64? {
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...12).contains(month), (1...lengths[month - 1]).contains(day), time.h < 24, time.m < 60, time.s <= 60 else { return nil }
        // Days from 1970-01-01 to the civil date (the proleptic Gregorian calendar).
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = Int64(era) * 146_097 + Int64(dayOfEra) - 719_468
        return days * 86400 + Int64(time.h * 3600 + time.m * 60 + time.s)
    }

    private struct Reader {
        let bytes: [UInt8]
        var i = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { i == bytes.count }
        var peek: UInt8? { i < bytes.count ? bytes[i] : nil }

        mutating func eat(_ b: UInt8) -> Bool {
            guard peek == b else { return false }
            i += 1
            return true
        }

        /// Skips spaces; whether there were any.
        @discardableResult mutating func skipSpaces() -> Bool {
            let start = i
            while peek == HTTPDate.space { i += 1 }
            return i > start
        }

        /// A run of ASCII letters.
        mutating func word() -> String? {
            let start = i
            while let b = peek, (b | 0x20) >= UInt8(ascii: "a"), (b | 0x20) <= UInt8(ascii: "z") { i += 1 }
            return i > start ? String(decoding: bytes[start..<i], as: UTF8.self) : nil
        }

        mutating func literal(_ text: StaticString) -> Bool {
            let n = text.utf8CodeUnitCount
            guard i + n <= bytes.count else { return false }
            let matches = text.withUTF8Buffer { Array($0) == Array(bytes[i..<i + n]) }
            if matches { i += n }
            return matches
        }

        /// Exactly `count` ASCII digits.
        mutating func digits(_ count: Int) -> Int? {
            guard i + count <= bytes.count else { return nil }
            var value = 0
            for b in bytes[i..<i + count] {
                guard b >= UInt8(ascii: "0"), b <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(b - UInt8(ascii: "0"))
            }
            // One digit where two could stand: the next byte must not be a digit too.
            if count == 1, i + 1 < bytes.count, bytes[i + 1] >= UInt8(ascii: "0"), bytes[i + 1] <= UInt8(ascii: "9") { return nil }
            i += count
            return value
        }

        mutating func month() -> Int? {
            let start = i
            guard let name = word(), let index = HTTPDate.months.firstIndex(of: name) else {
                i = start
                return nil
            }
            return index + 1
        }

        mutating func time() -> (h: Int, m: Int, s: Int)? {
            guard let h = digits(2), eat(HTTPDate.colon), let m = digits(2), eat(HTTPDate.colon), let s = digits(2) else { return nil }
            return (h, m, s)
        }
    }
}
