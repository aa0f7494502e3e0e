// A device's own control, as V4L2 describes it: what power users set by name through
// `/api/session/controls` beyond the AVFoundation-style settings.

public struct DeviceControl: Sendable, Equatable, Encodable {
    public enum Kind: String, Sendable, Codable { case integer, boolean, menu, button, integerMenu = "integer_menu", other }
    public var id: UInt32
    public var name: String
    public var kind: Kind
    public var minimum: Int
    public var maximum: Int
    public var step: Int
    public var defaultValue: Int
    public var disabled: Bool
    public var readOnly: Bool
    /// Menu items by index (menus only).
    public var menu: [Int: String]
    /// The current value, when read.
    public var value: Int?

    public init(id: UInt32, name: String, kind: Kind, minimum: Int, maximum: Int, step: Int = 1,
                defaultValue: Int, disabled: Bool = false, readOnly: Bool = false, menu: [Int: String] = [:], value: Int? = nil) {
        self.id = id; self.name = name; self.kind = kind; self.minimum = minimum; self.maximum = maximum
        self.step = step; self.defaultValue = defaultValue; self.disabled = disabled; self.readOnly = readOnly; self.menu = menu
        self.value = value
    }

    private enum CodingKeys: String, CodingKey {
        case id, name, key, kind, minimum, maximum, step, defaultValue, disabled, readOnly, menu, value
    }

    /// Encodes `key` too: it is what POST /api/session/controls takes.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id); try c.encode(name, forKey: .name); try c.encode(key, forKey: .key)
        try c.encode(kind, forKey: .kind); try c.encode(minimum, forKey: .minimum); try c.encode(maximum, forKey: .maximum)
        try c.encode(step, forKey: .step); try c.encode(defaultValue, forKey: .defaultValue)
        try c.encode(disabled, forKey: .disabled); try c.encode(readOnly, forKey: .readOnly)
        try c.encode(menu, forKey: .menu); try c.encode(value, forKey: .value)
    }

    /// `v` within the range, on the nearest step — as the V4L2 core and uvcvideo round it —
    /// so what is written is already what the device would keep.
    public func clamp(_ v: Int) -> Int {
        let c = min(max(v, minimum), maximum)
        guard step > 1 else { return c }
        let stepped = minimum + ((c - minimum + step / 2) / step) * step
        return stepped > maximum ? stepped - step : stepped
    }

    /// The V4L2 control name in v4l2-ctl's style: "Zoom, Absolute" → "zoom_absolute".
    public var key: String { Self.key(of: name) }

    /// A control's key from its name, as `key` has it.
    public static func key(of name: String) -> String {
        var out = ""
        var underscore = false
        for ch in name.lowercased() {
            if ch.isLetter || ch.isNumber { if underscore && !out.isEmpty { out += "_" }; out.append(ch); underscore = false }
            else { underscore = true }
        }
        return out
    }
}
