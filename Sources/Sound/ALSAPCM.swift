// One ALSA PCM, opened for capture or playback: the one owner of its snd_pcm_t (closed in
// deinit), used by one thread at a time. Every call's result is read once and thrown as an
// AudioError naming the call and the device (ALSA answers errno codes, negated).

import CALSA
import CameraCore

final class ALSAPCM {
    enum Direction { case capture, playback }

    let name: String
    private let pcm: OpaquePointer
    /// What hw_params settled on.
    private(set) var format = AudioFormat(encoding: .s16le, sampleRate: 48_000, channels: 1)
    private(set) var periodFrames = 480
    /// What the device offers, read before it was configured.
    private(set) var capabilities = AudioCapabilities(rates: [], channels: [], mixer: false, gainDb: AudioCapabilities.digitalGain)

    init(name: String, direction: Direction) throws(AudioError) {
        self.name = name
        var p: OpaquePointer?
        let stream = direction == .capture ? SND_PCM_STREAM_CAPTURE : SND_PCM_STREAM_PLAYBACK
        let rc = snd_pcm_open(&p, name, stream, 0)
        guard rc >= 0, let p else { throw .alsa("snd_pcm_open \(name)", rc) }
        pcm = p
    }

    deinit { snd_pcm_close(pcm) }

    /// The standard rates the hardware takes, without ALSA's resampling.
    static let standardRates = [8_000, 11_025, 16_000, 22_050, 32_000, 44_100, 48_000, 88_200, 96_000]

    /// Configures interleaved s16 at the device's native rate (48 kHz where it has it, else
    /// the nearest above, else below), its own channel count up to `maxChannels`, and periods
    /// of ≤ `periodSeconds`. `rate`/`channels` ask for exactly those (a talk-back speaker's).
    func configure(rate wanted: Int? = nil, channels wantedChannels: Int? = nil, maxChannels: Int = 2,
                   periodSeconds: Double = 0.010, periods: Int = 8) throws(AudioError) {
        var hw: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&hw) >= 0, let hw else { throw .alsa("snd_pcm_hw_params_malloc", -ENOMEM) }
        defer { snd_pcm_hw_params_free(hw) }
        try check(snd_pcm_hw_params_any(pcm, hw), "snd_pcm_hw_params_any")
        try check(snd_pcm_hw_params_set_rate_resample(pcm, hw, 0), "snd_pcm_hw_params_set_rate_resample")
        try check(snd_pcm_hw_params_set_access(pcm, hw, SND_PCM_ACCESS_RW_INTERLEAVED), "snd_pcm_hw_params_set_access")
        try check(snd_pcm_hw_params_set_format(pcm, hw, SND_PCM_FORMAT_S16_LE), "snd_pcm_hw_params_set_format S16_LE")

        let rates = Self.standardRates.filter { snd_pcm_hw_params_test_rate(pcm, hw, UInt32($0), 0) == 0 }
        var cmin: UInt32 = 0, cmax: UInt32 = 0
        snd_pcm_hw_params_get_channels_min(hw, &cmin)
        snd_pcm_hw_params_get_channels_max(hw, &cmax)
        let channels = (Int(cmin)...Int(min(cmax, 8))).filter { snd_pcm_hw_params_test_channels(pcm, hw, UInt32($0)) == 0 }
        capabilities = AudioCapabilities(rates: rates, channels: channels, mixer: false, gainDb: AudioCapabilities.digitalGain)

        let rate: Int
        if let wanted {
            guard rates.contains(wanted) else {
                throw .unsupported("\(name) does not take \(wanted) Hz (it takes \(rates.map(String.init).joined(separator: ", ")))")
            }
            rate = wanted
        } else {
            guard let r = rates.contains(48_000) ? 48_000 : rates.first(where: { $0 > 48_000 }) ?? rates.last else {
                throw .unsupported("\(name) takes none of the standard rates")
            }
            rate = r
        }
        let count: Int
        if let wantedChannels {
            guard channels.contains(wantedChannels) else {
                throw .unsupported("\(name) does not take \(wantedChannels) channel(s) (it takes \(channels.map(String.init).joined(separator: ", ")))")
            }
            count = wantedChannels
        } else {
            guard let c = channels.last(where: { $0 <= maxChannels }) ?? channels.first else {
                throw .unsupported("\(name) offers no channel count")
            }
            count = c
        }
        try check(snd_pcm_hw_params_set_channels(pcm, hw, UInt32(count)), "snd_pcm_hw_params_set_channels \(count)")
        try check(snd_pcm_hw_params_set_rate(pcm, hw, UInt32(rate), 0), "snd_pcm_hw_params_set_rate \(rate)")
        var period = snd_pcm_uframes_t(Double(rate) * periodSeconds)
        var dir: Int32 = 0
        try check(snd_pcm_hw_params_set_period_size_near(pcm, hw, &period, &dir), "snd_pcm_hw_params_set_period_size_near")
        var buffer = period * snd_pcm_uframes_t(periods)
        try check(snd_pcm_hw_params_set_buffer_size_near(pcm, hw, &buffer), "snd_pcm_hw_params_set_buffer_size_near")
        try check(snd_pcm_hw_params(pcm, hw), "snd_pcm_hw_params")
        snd_pcm_hw_params_get_period_size(hw, &period, &dir)
        periodFrames = Int(period)
        format = AudioFormat(encoding: .s16le, sampleRate: rate, channels: count)

        var sw: OpaquePointer?
        guard snd_pcm_sw_params_malloc(&sw) >= 0, let sw else { throw .alsa("snd_pcm_sw_params_malloc", -ENOMEM) }
        defer { snd_pcm_sw_params_free(sw) }
        try check(snd_pcm_sw_params_current(pcm, sw), "snd_pcm_sw_params_current")
        try check(snd_pcm_sw_params_set_avail_min(pcm, sw, period), "snd_pcm_sw_params_set_avail_min")
        try check(snd_pcm_sw_params_set_start_threshold(pcm, sw, 1), "snd_pcm_sw_params_set_start_threshold")
        try check(snd_pcm_sw_params(pcm, sw), "snd_pcm_sw_params")
    }

    /// The card the PCM is on (`hw:N` for its mixer), or nil for a plugin with none (pulse).
    var card: Int? {
        var info: OpaquePointer?
        guard snd_pcm_info_malloc(&info) >= 0, let info else { return nil }
        defer { snd_pcm_info_free(info) }
        guard snd_pcm_info(pcm, info) >= 0 else { return nil }
        let c = snd_pcm_info_get_card(info)
        return c >= 0 ? Int(c) : nil
    }

    func start() throws(AudioError) { try check(snd_pcm_start(pcm), "snd_pcm_start") }

    /// Waits up to `ms` for a period: true when one is ready, false at the timeout. An
    /// overrun or a lost device throws (`.system` with EPIPE, ESTRPIPE, ENODEV…).
    func wait(ms: Int32) throws(AudioError) -> Bool {
        let rc = snd_pcm_wait(pcm, ms)
        if rc < 0 { throw .alsa("snd_pcm_wait \(name)", rc) }
        return rc > 0
    }

    /// Reads up to `frames` into `buffer` (interleaved s16); answers the frames read.
    func read(into buffer: UnsafeMutableRawPointer, frames: Int) throws(AudioError) -> Int {
        let n = snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(frames))
        if n < 0 { throw .alsa("snd_pcm_readi \(name)", Int32(n)) }
        return Int(n)
    }

    /// Writes up to `frames` from `buffer` (interleaved s16); answers the frames written.
    func write(_ buffer: UnsafeRawPointer, frames: Int) throws(AudioError) -> Int {
        let n = snd_pcm_writei(pcm, buffer, snd_pcm_uframes_t(frames))
        if n < 0 { throw .alsa("snd_pcm_writei \(name)", Int32(n)) }
        return Int(n)
    }

    /// Plays out what is queued, then stops (playback's end).
    func drain() { snd_pcm_drain(pcm) }

    /// Frames between the hardware and the application now (capture: captured, not yet read).
    func delay() -> Int {
        var d: snd_pcm_sframes_t = 0
        return snd_pcm_delay(pcm, &d) < 0 ? 0 : Int(d)
    }

    /// After an overrun (EPIPE) or a suspend (ESTRPIPE): prepares the PCM again. Throws what
    /// cannot be recovered (the device is gone).
    func recover(from error: AudioError, restart: Bool) throws(AudioError) {
        guard case .system(let e) = error else { throw error }
        let rc = snd_pcm_recover(pcm, -e.errno, 1)
        if rc < 0 { throw error }
        if restart { try start() }
    }

    private func check(_ rc: Int32, _ call: String) throws(AudioError) {
        if rc < 0 { throw .alsa("\(call) \(name)", rc) }
    }
}
