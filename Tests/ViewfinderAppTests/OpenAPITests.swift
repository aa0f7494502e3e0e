import Foundation
import Testing
@testable import ViewfinderApp

/// Docs move with code: every route the server answers is in Public/openapi.yaml.
@Suite struct OpenAPITests {
    /// Paths and their methods, read from the spec's indentation (paths at 2, methods at 4).
    static func specRoutes() throws -> Set<String> {
        let text = try String(contentsOfFile: packageRoot + "/Public/openapi.yaml", encoding: .utf8)
        var routes = Set<String>(), inPaths = false, current: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "paths:" { inPaths = true; continue }
            if inPaths, !line.hasPrefix(" "), !line.isEmpty { break }
            if line.hasPrefix("  /"), line.hasSuffix(":") { current = String(line.dropFirst(2).dropLast()); continue }
            if let current, line.hasPrefix("    "), !line.hasPrefix("     "),
               let m = ["get", "post", "delete", "put", "patch"].first(where: { line.hasPrefix("    \($0):") }) {
                routes.insert("\(m.uppercased()) \(current)")
            }
        }
        return routes
    }

    @Test func everyRouteIsDocumented() throws {
        let app = try Application(configuration: testConfiguration())
        let spec = try Self.specRoutes()
        #expect(spec.count >= 10)
        for route in app.makeRouter().routeList {
            #expect(spec.contains("\(route.method) \(route.path)"), "\(route.method) \(route.path) is not in openapi.yaml")
        }
    }

    /// The spec is OpenAPI 3.0, where `exclusiveMinimum`/`exclusiveMaximum` are booleans beside
    /// `minimum`/`maximum` (3.1 made them numbers). A number there is an invalid schema that
    /// schemathesis (make test-fuzz) refuses; this finds it without the fuzzer.
    @Test func exclusiveBoundsAreOpenAPI30Booleans() throws {
        let text = try String(contentsOfFile: packageRoot + "/Public/openapi.yaml", encoding: .utf8)
        #expect(text.hasPrefix("openapi: 3.0."))
        let pattern = try NSRegularExpression(pattern: #"exclusive(Minimum|Maximum):\s*([^,}\s]+)"#)
        let range = NSRange(text.startIndex..., in: text)
        var found = 0
        for match in pattern.matches(in: text, range: range) {
            found += 1
            let value = String(text[Range(match.range(at: 2), in: text)!])
            #expect(value == "true" || value == "false", "exclusive bound \(value) is not a 3.0 boolean")
        }
        #expect(found > 0)
    }
}
