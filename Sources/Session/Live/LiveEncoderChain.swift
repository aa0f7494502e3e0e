// The encoders live streams are made by, in the order they are preferred (`live.encoders`,
// issue 38): each probed once per process with a short encode, the working ones kept. A
// stream opens the first that works; one that fails — at an open or mid-stream — is passed
// over by every stream from then on (a restart probes again), down to the last, which is
// never given up (libx264: a failure there is the frame's, not the encoder's). One chain is
// shared by every camera of a server.

import CameraCore
import Foundation
import Logging
import Movie
import SystemSupport

public final class LiveEncoderChain: Sendable {
    /// One candidate as the API reports it.
    public struct Entry: Sendable, Equatable, Codable {
        /// Its name in `live.encoders` (`v4l2m2m`, `vaapi`, `nvenc`, `x264`).
        public var name: String
        /// libavcodec's encoder (`h264_v4l2m2m`...).
        public var codec: String
        /// Probed and working, and not failed since.
        public var available: Bool
        /// Why not: the probe's error, or the failure that moved streams off it.
        public var reason: String?
        /// The probe's short encode, milliseconds (nil: not probed, or failed).
        public var probeMs: Double?
    }

    private struct State {
        var entries: [Entry]
        var fallbacks = 0
    }
    private let candidates: [LiveEncoderCandidate]
    private let state: Locked<State>
    private let logger: Logger

    /// Probe results by codec name: a process probes each encoder once (a test's servers share them).
    private static let probed = Locked<[String: Result<Double, MovieError>]>([:])

    /// `candidates` in order of preference, each probed (once per process) unless `probe` is false.
    public init(_ candidates: [LiveEncoderCandidate], probe: Bool = true, logger: Logger = Logger(label: "viewfinder.encoders")) {
        self.candidates = candidates
        self.logger = logger
        let entries = candidates.map { c -> Entry in
            guard probe else { return Entry(name: c.name, codec: c.codec, available: true) }
            let key = "\(c.name)/\(c.codec)"
            let result = Self.probed.withLock { $0[key] } ?? {
                let r = c.probe()
                Self.probed.withLock { $0[key] = r }
                return r
            }()
            switch result {
            case .success(let ms): return Entry(name: c.name, codec: c.codec, available: true, probeMs: (ms * 10).rounded() / 10)
            case .failure(let e): return Entry(name: c.name, codec: c.codec, available: false, reason: e.description)
            }
        }
        state = Locked(State(entries: entries))
    }

    /// libx264 alone, unprobed: a session's default (a test's).
    public static var software: LiveEncoderChain { LiveEncoderChain([.libavcodec(.x264)], probe: false) }

    public var entries: [Entry] { state.withLock { $0.entries } }

    /// Streams moved off a failing encoder since start (`viewfinder_live_encoder_fallbacks_total`).
    public var fallbacks: Int { state.withLock { $0.fallbacks } }

    /// The encoder a new stream gets now.
    var preferred: String? { state.withLock { $0.entries.first { $0.available }?.codec } }

    /// The candidates a stream may use now, in order: the available ones, or the last of all.
    private var usable: [(index: Int, candidate: LiveEncoderCandidate)] {
        let entries = self.entries
        let available = candidates.indices.filter { entries[$0].available }
        return (available.isEmpty ? [candidates.indices.last].compactMap { $0 } : available).map { ($0, candidates[$0]) }
    }

    /// An encoder from the first usable candidate; one that fails to open is passed over from
    /// then on (unless it is the last left), and the next tried.
    func make(format: VideoFormat, settings: LiveEncoderSettings, transposed: Bool, origin: Double?) throws(MovieError) -> any LiveVideoEncoding {
        var last: MovieError = .unsupported("no live encoder configured")
        for (i, candidate) in usable {
            do throws(MovieError) {
                return try candidate.make(format, settings, transposed, origin)
            } catch {
                last = error
                logger.warning("live encoder \(candidate.codec) failed to open at \(format.width)x\(format.height): \(error)")
                if !giveUp(index: i, error) { break }
            }
        }
        throw last
    }

    /// `name` failed mid-stream: the stream goes on with the next candidate from an IDR.
    func fallback(from name: String, _ error: MovieError, format: VideoFormat, settings: LiveEncoderSettings, transposed: Bool,
                  origin: Double?) -> (any LiveVideoEncoding)? {
        guard let i = candidates.firstIndex(where: { $0.codec == name || $0.name == name }), giveUp(index: i, error) else { return nil }
        state.withLock { $0.fallbacks += 1 }
        return try? make(format: format, settings: settings, transposed: transposed, origin: origin)
    }

    /// Marks candidate `i` unavailable, unless no other would be left: whether it was.
    private func giveUp(index i: Int, _ error: MovieError) -> Bool {
        state.withLock { s in
            let others = s.entries.indices.filter { j in j != i && s.entries[j].available }
            guard !others.isEmpty else { return false }
            s.entries[i].available = false
            s.entries[i].reason = error.description
            return true
        }
    }
}
