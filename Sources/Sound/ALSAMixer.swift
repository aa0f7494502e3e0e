// A sound card's capture gain through ALSA's simple mixer: the one owner of its snd_mixer_t.
// The element is the card's first with a capture volume ("Mic" on a webcam, "Capture" on a
// sound card); gains are set in the mixer's own steps and read back, as V4L2 controls are.

import CALSA
import CameraCore

final class ALSAMixer {
    private let mixer: OpaquePointer
    private let element: OpaquePointer
    let card: String
    /// The element's range in dB and its step.
    let range: AudioCapabilities.Gain

    /// Nil when the card has no element with a capture volume in dB.
    init?(card: String) {
        var m: OpaquePointer?
        guard snd_mixer_open(&m, 0) >= 0, let m else { return nil }
        guard snd_mixer_attach(m, card) >= 0, snd_mixer_selem_register(m, nil, nil) >= 0, snd_mixer_load(m) >= 0 else {
            snd_mixer_close(m)
            return nil
        }
        var found: OpaquePointer?
        var e = snd_mixer_first_elem(m)
        while let elem = e {
            if snd_mixer_selem_is_active(elem) != 0 && snd_mixer_selem_has_capture_volume(elem) != 0 {
                found = elem
                break
            }
            e = snd_mixer_elem_next(elem)
        }
        var lo = 0, hi = 0, rawLo = 0, rawHi = 0
        guard let found, snd_mixer_selem_get_capture_dB_range(found, &lo, &hi) >= 0, hi > lo,
              snd_mixer_selem_get_capture_volume_range(found, &rawLo, &rawHi) >= 0, rawHi > rawLo else {
            snd_mixer_close(m)
            return nil
        }
        mixer = m
        element = found
        self.card = card
        let step = (Double(hi - lo) / 100 / Double(rawHi - rawLo) * 100).rounded() / 100
        range = AudioCapabilities.Gain(min: Double(lo) / 100, max: Double(hi) / 100, step: step)
    }

    deinit { snd_mixer_close(mixer) }

    /// Sets every channel's capture volume to the step nearest `db`; answers what it reads back.
    func set(_ db: Double) throws(AudioError) -> Double {
        let target = Int((min(max(db, range.min), range.max) * 100).rounded())
        var below = 0, above = 0
        let hasBelow = snd_mixer_selem_ask_capture_dB_vol(element, target, -1, &below) >= 0
        let hasAbove = snd_mixer_selem_ask_capture_dB_vol(element, target, 1, &above) >= 0
        var raw = hasBelow ? below : above
        if hasBelow && hasAbove {
            var dbBelow = 0, dbAbove = 0
            snd_mixer_selem_ask_capture_vol_dB(element, below, &dbBelow)
            snd_mixer_selem_ask_capture_vol_dB(element, above, &dbAbove)
            raw = abs(dbAbove - target) < abs(target - dbBelow) ? above : below
        }
        let rc = snd_mixer_selem_set_capture_volume_all(element, raw)
        if rc < 0 { throw .alsa("snd_mixer_selem_set_capture_volume_all \(card)", rc) }
        return read()
    }

    /// The first channel's capture gain as the mixer has it.
    func read() -> Double {
        snd_mixer_handle_events(mixer)
        var v = 0
        guard snd_mixer_selem_get_capture_dB(element, SND_MIXER_SCHN_FRONT_LEFT, &v) >= 0 else { return range.min }
        return Double(v) / 100
    }
}
