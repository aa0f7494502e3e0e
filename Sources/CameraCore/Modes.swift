// The modes of AVCaptureDevice's settings, as values rather than strings: one spelling,
// checked by the compiler, encoded as the contract's strings.

public enum FocusMode: String, Sendable, Codable, CaseIterable {
    /// The lens stays where it is (or where `lensPosition` puts it).
    case locked
    /// Focus once, then hold (autoFocus).
    case auto
    /// Keep refocusing (continuousAutoFocus).
    case continuous
}

public enum ExposureMode: String, Sendable, Codable, CaseIterable {
    case locked, auto, continuous
    /// Duration and ISO as given.
    case custom
}

public enum WhiteBalanceMode: String, Sendable, Codable, CaseIterable {
    case locked, auto, continuous
}

public enum TorchMode: String, Sendable, Codable, CaseIterable {
    case off, on, auto
}
