// `viewfinder state show|reset [CAMERA]`: what the server saved of what users changed at
// runtime (issue 57), and a factory reset of it. Run reset with the server stopped: a running
// server saves its own state again at its next change.

import ArgumentParser
import Foundation
import JSON
import ViewfinderApp

struct StateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state",
        abstract: "Show or reset the saved state: what was changed at runtime, replayed at each start (state.directory).",
        subcommands: [Show.self, Reset.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the saved state as JSON (nothing saved: {}).")
        @Option(help: "Configuration file (default ./config.json if present).") var config: String?

        func run() throws {
            let c = try effective(ConfigurationOverrides(), path: config)
            let file = StateFile(path: c.state.file)
            let loaded = file.load()
            for p in loaded.problems { FileHandle.standardError.write(Data("viewfinder: \(p)\n".utf8)) }
            if loaded.source == .previous {
                FileHandle.standardError.write(Data("viewfinder: \(file.path) unusable; showing the last good copy, \(file.previousPath)\n".utf8))
            }
            FileHandle.standardOutput.write(Data((loaded.state ?? .object([:])).encoded() + [10]))
        }
    }

    struct Reset: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Forget what was saved (of CAMERA only, if given): the next start is the configuration's.",
            discussion: "Run it with the server stopped: a running server writes its state again at its next change.")
        @Argument(help: "The camera whose saved settings go (default: all).") var camera: String?
        @Option(help: "Configuration file (default ./config.json if present).") var config: String?

        func run() throws {
            let c = try effective(ConfigurationOverrides(), path: config)
            let file = StateFile(path: c.state.file)
            do {
                if let camera {
                    let removed = try file.removeCamera(camera)
                    FileHandle.standardError.write(Data("viewfinder: \(removed ? "camera '\(camera)': saved settings removed" : "camera '\(camera)': nothing saved")\n".utf8))
                } else {
                    try file.remove()
                    FileHandle.standardError.write(Data("viewfinder: \(file.path): removed\n".utf8))
                }
            } catch {
                FileHandle.standardError.write(Data("viewfinder: \(error)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
