// What a camera can do, in AVCaptureDevice's terms, as `/api/cameras` reports it.

public struct Range: Sendable, Equatable, Codable {
    public var min: Double
    public var max: Double
    public init(min: Double, max: Double) { self.min = min; self.max = max }

    public func clamp(_ v: Double) -> Double { Swift.min(Swift.max(v, min), max) }
}

public struct ZoomCapability: Sendable, Equatable, Codable {
    public var min: Double
    public var max: Double
    /// False when zoom is digital only (crop and scale).
    public var optical: Bool
    /// The largest factor the lens reaches; beyond it the picture is cropped (1 without a lens).
    public var opticalMax: Double
    /// True when the camera crops its sensor for the zoom beyond the lens (libcamera's
    /// ScalerCrop, before its ISP scales: the picture keeps the sensor's detail); false when
    /// the delivered frame is cropped and scaled up.
    public var sensorCrop: Bool
    public init(min: Double, max: Double, optical: Bool, opticalMax: Double? = nil, sensorCrop: Bool = false) {
        self.min = min; self.max = max; self.optical = optical
        self.opticalMax = opticalMax ?? (optical ? max : 1)
        self.sensorCrop = sensorCrop
    }
}

public struct Capabilities: Sendable, Equatable, Codable {
    public var zoom: ZoomCapability
    public var focusModes: [FocusMode]
    public var focusPointOfInterest: Bool
    public var lensPosition: Bool
    public var exposureModes: [ExposureMode]
    public var exposurePointOfInterest: Bool
    public var exposureDuration: Range?
    public var iso: Range?
    public var exposureBias: Range?
    public var whiteBalanceModes: [WhiteBalanceMode]
    public var whiteBalanceTemperature: Range?
    public var torch: Bool
    /// What the metadata output can detect (all of zbar's types on every camera).
    public var metadata = MetadataCapability()

    public init(zoom: ZoomCapability, focusModes: [FocusMode], focusPointOfInterest: Bool, lensPosition: Bool,
                exposureModes: [ExposureMode], exposurePointOfInterest: Bool, exposureDuration: Range?, iso: Range?,
                exposureBias: Range?, whiteBalanceModes: [WhiteBalanceMode], whiteBalanceTemperature: Range?, torch: Bool) {
        self.zoom = zoom
        self.focusModes = focusModes
        self.focusPointOfInterest = focusPointOfInterest
        self.lensPosition = lensPosition
        self.exposureModes = exposureModes
        self.exposurePointOfInterest = exposurePointOfInterest
        self.exposureDuration = exposureDuration
        self.iso = iso
        self.exposureBias = exposureBias
        self.whiteBalanceModes = whiteBalanceModes
        self.whiteBalanceTemperature = whiteBalanceTemperature
        self.torch = torch
    }

    /// A simulated device with every control, like the simulator's mock camera.
    public static let simulated = Capabilities(
        zoom: ZoomCapability(min: 1, max: 8, optical: false),
        focusModes: [.locked, .auto, .continuous], focusPointOfInterest: true, lensPosition: true,
        exposureModes: [.locked, .auto, .continuous, .custom], exposurePointOfInterest: true,
        exposureDuration: Range(min: 0.0001, max: 0.5), iso: Range(min: 50, max: 3200),
        exposureBias: Range(min: -2, max: 2),
        whiteBalanceModes: [.locked, .auto, .continuous],
        whiteBalanceTemperature: Range(min: 2800, max: 7500), torch: true)

    /// A fixed camera: digital zoom only, fixed focus, automatic exposure and white balance.
    public static let fixed = Capabilities(
        zoom: ZoomCapability(min: 1, max: 8, optical: false),
        focusModes: [.locked], focusPointOfInterest: false, lensPosition: false,
        exposureModes: [.continuous], exposurePointOfInterest: false,
        exposureDuration: nil, iso: nil, exposureBias: nil,
        whiteBalanceModes: [.continuous], whiteBalanceTemperature: nil, torch: false)
}
