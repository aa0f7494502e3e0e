// Which cameras run when the server starts: what the configuration starts — the main view
// (`session.autostart`) and cameras in their own right (`cameras[].autostart`) — unless the
// saved state says a user left it otherwise (issue 57: `mainRunning`, each camera's `running`).

extension Application {
    /// Whether the configuration starts the main view, and the cameras it starts in their own
    /// right (they run on when the main view leaves them).
    var autostart: (main: Bool, own: Set<String>) {
        var own = Set<String>()
        if case .list(let entries) = configuration.cameras { own = Set(entries.filter { $0.autostart == true }.map(\.id)) }
        return (configuration.session.autostart, own)
    }

    /// Starts the main view, then each camera meant to run in its own right.
    func startCameras() async {
        let (main, own) = autostart
        if keeper?.runs(.mainView, configured: main) ?? main {
            do { try await session.start() } catch { logger.error("autostart failed: \(error.http.message)") }
        }
        for s in cameras.sessions {
            let configured = own.contains(s.id)
            guard keeper?.runs(.camera(s.id), configured: configured) ?? configured else { continue }
            do { try await cameras.start(s) } catch { logger.error("camera \(s.id): autostart failed: \(error.http.message)") }
        }
    }
}
