// swift-tools-version: 6.0
// libFuzzer targets for Viewfinder's input parsers (`make fuzz`, scripts/fuzz). A package of
// its own so that plain `swift build` and `swift test` of the main package never see them;
// they reach the main package through its library products only.
//
//   swift build --package-path Fuzz -c debug --scratch-path .build-fuzz -Xswiftc -sanitize=fuzzer,address
import PackageDescription

let package = Package(
    name: "ViewfinderFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Viewfinder", path: "..")],
    targets: [
        // libFuzzer's LLVMFuzzerRunDriver, called from each target's main.swift.
        .target(name: "CFuzzDriver"),
        // URL path → route and parameters; URL path → file under the public directory;
        // photo and movie ids (a route's {id}) → the file they name.
        .executableTarget(name: "FuzzRouter", dependencies: [
            "CFuzzDriver",
            .product(name: "HTTPServer", package: "Viewfinder"),
            .product(name: "Session", package: "Viewfinder"),
            .product(name: "Movie", package: "Viewfinder"),
        ]),
        // Request bodies: JSONValue.parse and JSONObjectReader.
        .executableTarget(name: "FuzzJSON", dependencies: ["CFuzzDriver", .product(name: "JSON", package: "Viewfinder")]),
        // config.json: Configuration.parse and its jsonText (check-config).
        .executableTarget(name: "FuzzConfig", dependencies: [
            "CFuzzDriver",
            .product(name: "ViewfinderApp", package: "Viewfinder"),
            .product(name: "JSON", package: "Viewfinder"),
        ]),
        // The Authorization header: Credentials.parse and DigestAnswer (the check behind stale=true).
        .executableTarget(name: "FuzzAuth", dependencies: ["CFuzzDriver", .product(name: "Auth", package: "Viewfinder")]),
        // ONVIF's requests: Envelope.read (libxml2, no DTD) and the write-back of what it read.
        .executableTarget(name: "FuzzSOAP", dependencies: ["CFuzzDriver", .product(name: "SOAP", package: "Viewfinder")]),
        // MJPEG's lossless rotation/mirror/crop: the tjTransform parameters, and the transform itself.
        .executableTarget(name: "FuzzTransform", dependencies: [
            "CFuzzDriver",
            .product(name: "JPEG", package: "Viewfinder"),
            .product(name: "CameraCore", package: "Viewfinder"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
