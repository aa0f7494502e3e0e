// swift-tools-version: 6.0
// Viewfinder: an HTTP camera server for Linux with AVFoundation's capture-session model.
import PackageDescription

// `pkg-config --cflags gstreamer-1.0` on Debian (glib's config header is per architecture).
#if arch(arm64)
let multiarch = "aarch64-linux-gnu"
#elseif arch(arm)
let multiarch = "arm-linux-gnueabihf"
#else
let multiarch = "x86_64-linux-gnu"
#endif
let gstreamerIncludes = ["-I/usr/include/gstreamer-1.0", "-I/usr/include/glib-2.0", "-I/usr/lib/\(multiarch)/glib-2.0/include"]

let package = Package(
    name: "Viewfinder",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "viewfinder", targets: ["viewfinder"]),
        .executable(name: "viewfinder-bench", targets: ["ViewfinderBench"]),
        // For the libFuzzer targets of Fuzz/Package.swift (`make fuzz`), which see only products.
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "JSON", targets: ["JSON"]),
        .library(name: "ViewfinderApp", targets: ["ViewfinderApp"]),
        .library(name: "JPEG", targets: ["JPEG"]),
        .library(name: "CameraCore", targets: ["CameraCore"]),
        .library(name: "Session", targets: ["Session"]),
        .library(name: "Movie", targets: ["Movie"]),
        .library(name: "Auth", targets: ["Auth"]),
        .library(name: "SOAP", targets: ["SOAP"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // C interop: each C module is imported by exactly one Swift module.
        // libmicrohttpd, and GnuTLS for the certificate store that SIGHUP reloads (shim.c):
        // GnuTLS's headers stay in the C file; HTTPServer sees an opaque store.
        .target(name: "CMicroHTTPD", linkerSettings: [.linkedLibrary("microhttpd"), .linkedLibrary("gnutls")]),
        .systemLibrary(
            name: "CTurboJPEG", pkgConfig: "libturbojpeg",
            providers: [.apt(["libturbojpeg0-dev"])]),
        .target(name: "CV4L2"),
        .systemLibrary(name: "CCrypt", providers: [.apt(["libcrypt-dev"])]),
        .systemLibrary(name: "CGnuTLSCrypto", pkgConfig: "gnutls", providers: [.apt(["libgnutls28-dev"])]),
        // glibc's malloc tuning and the process's huge-page policy (prctl), for the executable.
        .target(name: "CMalloc"),
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CZBar", pkgConfig: "zbar", providers: [.apt(["libzbar-dev"])]),
        // libxml2: SOAP envelopes read and written (the SOAP module alone).
        .systemLibrary(name: "CXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        // libcurl (GnuTLS's build, libcurl4-gnutls-dev): the one request Viewfinder makes of another
        // HTTP server, an ONVIF push subscription's Notify. A C shim, as curl_easy_setopt is
        // variadic (the ONVIF module alone).
        .target(name: "CCurl", linkerSettings: [.linkedLibrary("curl")]),
        // libmosquitto, the MQTT 5 client (the MQTT module alone).
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
        // FFmpeg: libavcodec (libx264), libavformat (MP4), libswscale, libswresample, libavutil.
        // ALSA's libasound: microphones and speakers (the Sound module alone).
        .systemLibrary(name: "CALSA", pkgConfig: "alsa", providers: [.apt(["libasound2-dev"])]),
        .systemLibrary(name: "CFFmpeg", providers: [.apt(["libavcodec-dev", "libavformat-dev", "libswscale-dev", "libswresample-dev", "libavutil-dev"])]),
        // GStreamer 1.22 (gst-rtsp-server, webrtcbin, appsrc) behind C glue: GObject's signals,
        // promises and the RTSP auth subclass stay in C; Swift sees opaque handles. The include
        // paths are pkg-config's for gstreamer-1.0 (a system-library target would also pass its
        // -pthread, which SwiftPM refuses with a warning per file).
        .target(name: "CGStreamerShim", cSettings: [.unsafeFlags(gstreamerIncludes)], linkerSettings: [
            .linkedLibrary("gstrtspserver-1.0"), .linkedLibrary("gstwebrtc-1.0"), .linkedLibrary("gstsdp-1.0"),
            .linkedLibrary("gstrtsp-1.0"), .linkedLibrary("gstrtp-1.0"), .linkedLibrary("gstapp-1.0"), .linkedLibrary("gstbase-1.0"),
            .linkedLibrary("gstreamer-1.0"), .linkedLibrary("gobject-2.0"), .linkedLibrary("glib-2.0"),
        ]),

        // libcamera (C++) behind a C facade: its manager, one camera's stream and requests, its
        // controls by name. Debian's libcamera.pc gives -I/usr/include/libcamera; its -l flags
        // are the two libraries (built with gcc against libstdc++, which SwiftPM links for C++).
        .target(name: "CLibcamera", cxxSettings: [.unsafeFlags(["-I/usr/include/libcamera"])],
                linkerSettings: [.linkedLibrary("camera"), .linkedLibrary("camera-base")]),

        // Pure Swift domain: frames, formats, the CaptureDevice protocol, errors.
        .target(name: "CameraCore", dependencies: ["SystemSupport"]),
        // The system leaf every module stands on: the one lock (a pthread mutex ThreadSanitizer
        // sees), the typed errno error, thread names, the clocks, the one timer mechanism
        // (Alarm) and the one atomic file write.
        .target(name: "SystemSupport", dependencies: ["CSystemCalls"]),
        // The libc calls Swift's Glibc module does not import (fallocate: GNU), for the Sys funnel.
        .target(name: "CSystemCalls"),
        // The one subscription shape every client of every output takes (an MJPEG viewer, a
        // live.mp4 or SSE client, an RTSP media, a WebRTC peer, the MQTT bridge): a leaf the
        // hubs and the transports both import.
        .target(name: "Subscriptions"),
        // The encode path's de-interleaves in SSE2/NEON (a C kernel, no system library).
        .target(name: "CPixels"),
        // The synthetic sensor's noise: a C kernel optimized in every build (a debug build's
        // -O0 would not add it to a 1080p frame within a frame's time).
        .target(name: "CSensorNoise", cSettings: [.unsafeFlags(["-O2", "-fno-math-errno"])], linkerSettings: [.linkedLibrary("m")]),
        .target(name: "JPEG", dependencies: ["CTurboJPEG", "CPixels", "CameraCore"]),
        // The motion detector's per-cell work (a C kernel, -O2 in every build: a debug build
        // keeps up with the camera too), and the detector, masks and events around it.
        .target(name: "CMotion", cSettings: [.unsafeFlags(["-O2"])], linkerSettings: [.linkedLibrary("m")]),
        .target(name: "Motion", dependencies: ["CMotion", "CameraCore"]),
        // Codes laid out as their standards draw them (QR through libqrencode), for the synthetic scene.
        .target(name: "Barcodes", dependencies: ["CQREncode", "CameraCore", "SystemSupport"]),
        // Optimized in every build: the synthetic camera stands in for a device, whose frames
        // cost the host nothing to draw. Drawn by debug code they cost several times a release
        // build's, and make test runs dozens of them at once on two cores.
        .target(name: "Capture", dependencies: ["CameraCore", "JPEG", "CV4L2", "CLibcamera", "CSensorNoise", "Barcodes", "SystemSupport"],
                swiftSettings: [.unsafeFlags(["-O"])]),
        // Microphones and speakers: ALSA capture and playback, the synthetic microphone, and
        // which sound card is a camera's own.
        .target(name: "Sound", dependencies: ["CALSA", "CameraCore", "SystemSupport"]),
        // The metadata output's decoder: zbar on a luma plane.
        .target(name: "Metadata", dependencies: ["CZBar", "CameraCore"]),
        // The movie output: fragmented MP4 files, H.264 or MJPEG, repaired after a crash.
        .target(name: "Movie", dependencies: ["CFFmpeg", "CameraCore", "JPEG", "SystemSupport"]),
        .target(name: "Session", dependencies: [
            "CameraCore", "JPEG", "Movie", "Metadata", "Motion", "Subscriptions", "SystemSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // An MQTT 5 client that stays connected: libmosquitto on a thread and poll() of our own.
        .target(name: "MQTT", dependencies: ["CMosquitto", "SystemSupport", .product(name: "Logging", package: "swift-log")]),
        // The live H.264 transports: an RTSP server and WebRTC peers, fed access units.
        .target(name: "Streaming", dependencies: ["CGStreamerShim", "Subscriptions", "SystemSupport"]),
        // Who may do what: users, tokens, roles, password and digest hashes, brute-force limits.
        .target(name: "Auth", dependencies: ["CCrypt", "CGnuTLSCrypto", "SystemSupport"]),
        // SOAP 1.2 envelopes over libxml2 (no DTD, no entities, no network): a core that knows no service.
        .target(name: "SOAP", dependencies: ["CXML2"]),
        // ONVIF's device and media services over SOAP, answered from what the application
        // says of its cameras (the ONVIFDevice protocol); sign-in decided by the application.
        .target(name: "ONVIF", dependencies: ["SOAP", "Subscriptions", "SystemSupport", "CCurl"]),
        // The strict JSON value and reader: request bodies (HTTPServer's error envelope too) and config.json.
        .target(name: "JSON"),
        .target(name: "HTTPServer", dependencies: [
            "CMicroHTTPD", "JSON", "Subscriptions", "SystemSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "ViewfinderApp", dependencies: [
            "CameraCore", "Capture", "Movie", "Barcodes", "Motion", "Session", "Sound", "HTTPServer", "JSON", "Auth", "Streaming", "MQTT", "ONVIF", "SOAP", "Subscriptions", "SystemSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "viewfinder", dependencies: [
            "ViewfinderApp", "HTTPServer", "JSON", "CMalloc", "SystemSupport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // `make bench`: times the encode step on a raw frame; encodes the same frames as JPEG and H.264 (bench/live.py).
        .executableTarget(name: "ViewfinderBench", dependencies: ["JPEG", "CameraCore", "Capture", "Motion", "Movie", "SystemSupport"]),

        // Stateful models of real cameras at the ioctl seam, shared by the test targets.
        // A test's time: how long it waits for an event (TestTime) and a clock it moves (ManualTimekeeper).
        .target(name: "TimeTestSupport", dependencies: ["SystemSupport"], path: "Tests/TimeTestSupport"),
        .target(name: "CaptureTestSupport", dependencies: ["Capture", "CameraCore", "CV4L2", "JPEG", "Movie", "SystemSupport", "TimeTestSupport"],
                path: "Tests/CaptureTestSupport"),
        .testTarget(name: "SessionTests", dependencies: ["Session", "Movie", "Sound", "Subscriptions", "Capture", "CaptureTestSupport", "CameraCore", "JPEG", "CV4L2", "Barcodes", "SystemSupport",
                                                          .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "JPEGTests", dependencies: ["JPEG", "CPixels", "CameraCore"]),
        .testTarget(name: "MovieTests", dependencies: ["Movie", "JPEG", "CameraCore", "SystemSupport"]),
        .testTarget(name: "MetadataTests", dependencies: ["Metadata", "Barcodes", "CameraCore"]),
        .testTarget(name: "MotionTests", dependencies: ["Motion", "Capture", "CaptureTestSupport", "CameraCore"]),
        .testTarget(name: "CaptureTests", dependencies: ["Capture", "CaptureTestSupport", "CameraCore", "JPEG", "CV4L2", "SystemSupport"]),
        .testTarget(name: "SystemSupportTests", dependencies: ["SystemSupport"]),
        .testTarget(name: "SoundTests", dependencies: ["Sound", "CameraCore", "CaptureTestSupport", "SystemSupport"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "Subscriptions", "SystemSupport", "TimeTestSupport"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .target(name: "MQTTTestSupport", dependencies: ["MQTT", "SystemSupport", .product(name: "Logging", package: "swift-log")], path: "Tests/MQTTTestSupport"),
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "MQTTTestSupport", "SystemSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(name: "AuthTests", dependencies: ["Auth"]),
        .testTarget(name: "ONVIFTests", dependencies: ["ONVIF", "SOAP", "SystemSupport", "HTTPServer", "TimeTestSupport"]),
        .testTarget(name: "ViewfinderAppTests", dependencies: [
            "ViewfinderApp", "HTTPServer", "JSON", "Session", "Streaming", "Movie", "JPEG", "CameraCore", "Capture", "CaptureTestSupport", "CV4L2", "Barcodes", "Metadata", "Auth", "MQTT", "MQTTTestSupport", "SystemSupport", "SOAP", "ONVIF",
            .product(name: "Logging", package: "swift-log"),
        ], exclude: ["Fixtures"]),
    ],
    swiftLanguageModes: [.v6],
    cxxLanguageStandard: .cxx17
)
