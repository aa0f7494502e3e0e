// XML Schema's time values as ONVIF's events use them: a subscription's term is either a
// duration ("PT600S", "PT1M", "P1DT2H") or a moment ("2026-11-29T10:00:00Z"), and every
// message carries the moment it happened.

import Foundation

enum XSDTime {
    /// Seconds in an xs:duration ("PnYnMnDTnHnMnS"; years and months as 365 and 30 days, as
    /// no term here is that long), nil when it is not one or is negative.
    static func duration(_ text: String) -> Double? {
        var s = Substring(text)
        guard s.first == "P" else { return nil }
        s = s.dropFirst()
        var seconds = 0.0, inTime = false, number = "", any = false
        for c in s {
            if c == "T" { guard !inTime, number.isEmpty else { return nil }; inTime = true; continue }
            if c.isNumber || c == "." { number.append(c); continue }
            guard let n = Double(number) else { return nil }
            number = ""
            any = true
            switch (c, inTime) {
            case ("Y", false): seconds += n * 365 * 86_400
            case ("M", false): seconds += n * 30 * 86_400
            case ("W", false): seconds += n * 7 * 86_400
            case ("D", false): seconds += n * 86_400
            case ("H", true): seconds += n * 3_600
            case ("M", true): seconds += n * 60
            case ("S", true): seconds += n
            default: return nil
            }
        }
        return number.isEmpty && any ? seconds : nil
    }

    /// An xs:dateTime as seconds since 1970 ("Z" or an offset; none read as UTC).
    static func moment(_ text: String) -> Double? {
        let t = text.trimmingCharacters(in: .whitespaces)
        guard t.count >= 19 else { return nil }
        let chars = Array(t)
        func int(_ from: Int, _ count: Int) -> Int? { Int(String(chars[from..<from + count])) }
        guard chars[4] == "-", chars[7] == "-", chars[10] == "T", chars[13] == ":", chars[16] == ":",
              let y = int(0, 4), let mo = int(5, 2), let d = int(8, 2), let h = int(11, 2), let mi = int(14, 2), let sec = int(17, 2),
              (1...12).contains(mo), (1...31).contains(d), h < 24, mi < 60, sec < 61 else { return nil }
        var i = 19, fraction = 0.0
        if i < chars.count, chars[i] == "." {
            var digits = "0."
            i += 1
            while i < chars.count, chars[i].isNumber { digits.append(chars[i]); i += 1 }
            fraction = Double(digits) ?? 0
        }
        var offset = 0
        if i < chars.count {
            if chars[i] == "Z", i == chars.count - 1 { offset = 0 }
            else if chars[i] == "+" || chars[i] == "-", chars.count - i == 6, chars[i + 3] == ":",
                    let oh = int(i + 1, 2), let om = int(i + 4, 2) {
                offset = (oh * 3_600 + om * 60) * (chars[i] == "-" ? -1 : 1)
            } else { return nil }
        }
        var tm = tm()
        tm.tm_year = Int32(y - 1900); tm.tm_mon = Int32(mo - 1); tm.tm_mday = Int32(d)
        tm.tm_hour = Int32(h); tm.tm_min = Int32(mi); tm.tm_sec = Int32(sec)
        return Double(timegm(&tm) - offset) + fraction
    }

    /// A term as a request gives it: a duration from `now`, or a moment.
    static func term(_ text: String, now: Double) -> Double? {
        duration(text).map { now + $0 } ?? moment(text)
    }

    /// "2026-11-29T09:10:11Z" (whole seconds: what ONVIF's examples and clients use), or with
    /// milliseconds ("…:11.250Z") for the moment an event happened.
    static func format(_ seconds: Double, milliseconds: Bool = false) -> String {
        let whole = seconds.rounded(.down)
        var t = time_t(whole)
        var tm = tm()
        gmtime_r(&t, &tm)
        let date = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", Int(tm.tm_year) + 1900, Int(tm.tm_mon) + 1, Int(tm.tm_mday),
                          Int(tm.tm_hour), Int(tm.tm_min), Int(tm.tm_sec))
        return milliseconds ? date + String(format: ".%03dZ", min(999, Int(((seconds - whole) * 1000).rounded(.down)))) : date + "Z"
    }
}
