// The client's thread: it makes the `struct mosquitto`, connects, reconnects, moves queued
// messages into it, and destroys it. Nothing else touches the handle.

import CMosquitto
import Foundation
import Glibc
import Logging
import SystemSupport

/// libmosquitto's process-wide setup (not thread-safe, once per process).
private let libraryReady: Bool = {
    mosquitto_lib_init()
    return true
}()

/// What libmosquitto's C callbacks find through `obj`: the client and the loop's flags.
final class LoopContext {
    let client: MQTTClient
    var connected = false
    /// The last failure, said as the status says it.
    var failure = "not connected yet"
    init(client: MQTTClient) { self.client = client }
}

extension MQTTClient {
    /// A connect (TCP, TLS, CONNACK) not done in this long is given up and made again: one the
    /// network swallows (a cut link: no RST, no answer) would otherwise wait for the kernel's
    /// SYN retries, minutes, and miss the link's return by up to half a minute.
    public static let connectTimeout = 5.0

    /// A handle with the options, credentials, TLS, will and callbacks; nil (the status says
    /// why) when libmosquitto refuses them.
    private func makeHandle(_ context: LoopContext) -> OpaquePointer? {
        let obj = Unmanaged.passUnretained(context).toOpaque()
        guard let m = mosquitto_new(options.clientID, true, obj) else {
            finish(status: .disconnected("mosquitto_new failed"))
            return nil
        }
        do throws(MQTTError) {
            try configure(m)
        } catch {
            logger.error("mqtt: \(error)")
            mosquitto_destroy(m)
            finish(status: .disconnected(error.description))
            return nil
        }
        installCallbacks(m)
        return m
    }

    func run() {
        _ = libraryReady
        let context = LoopContext(client: self)
        guard var m = makeHandle(context) else { return }
        defer { mosquitto_destroy(m) }  // after the loop (the handle of that moment): this thread is its one owner
        var connectingSince: Double?
        var attempt = 0
        var nextAttempt = 0.0
        while !shared.withLock({ $0.stopping }) {
            var socket = mosquitto_socket(m)
            if socket < 0 {
                if context.connected { context.connected = false }
                let now = Clock.monotonic()
                if now < nextAttempt {
                    _ = wait(socket: -1, wantWrite: false, timeout: nextAttempt - now)
                    continue
                }
                shared.withLock { $0.status = attempt == 0 ? .connecting : .disconnected(context.failure) }
                // Async: the TCP connect (and TLS handshake) finish in loop_write/loop_read below,
                // so stop() is never held up by a broker that does not answer.
                let rc = mosquitto_connect_bind_async(m, options.host, Int32(options.port), Int32(options.keepAlive), nil)
                attempt += 1
                let delay = min(options.reconnectDelay.first * Double(1 << min(attempt - 1, 8)), options.reconnectDelay.most)
                nextAttempt = Clock.monotonic() + delay
                if rc != Int32(MOSQ_ERR_SUCCESS.rawValue) {
                    context.failure = MQTTError(call: "connect \(options.host):\(options.port)", code: rc).description
                    shared.withLock { $0.status = .disconnected(context.failure) }
                    if attempt == 1 || attempt % 30 == 0 { logger.warning("mqtt: \(context.failure); retrying") }
                    continue
                }
                socket = mosquitto_socket(m)
                if socket < 0 { continue }
                connectingSince = Clock.monotonic()
            }
            if context.connected {
                attempt = 0
                connectingSince = nil
                move(into: m)
            } else if let since = connectingSince, Clock.monotonic() - since > Self.connectTimeout {
                context.failure = "connect to \(options.host):\(options.port): no answer in \(Int(Self.connectTimeout)) s"
                shared.withLock { $0.status = .disconnected(context.failure) }
                logger.warning("mqtt: \(context.failure); retrying")
                guard let fresh = makeHandle(context) else { return }  // the old one is still the defer's
                mosquitto_destroy(m)  // closes its socket; the fresh handle connects from scratch
                m = fresh
                connectingSince = nil
                continue
            }
            let ready = wait(socket: socket, wantWrite: mosquitto_want_write(m), timeout: 0.5)
            if ready.readable { _ = mosquitto_loop_read(m, 1) }
            if mosquitto_socket(m) >= 0 && (ready.writable || mosquitto_want_write(m)) { _ = mosquitto_loop_write(m, 1) }
            if mosquitto_socket(m) >= 0 { _ = mosquitto_loop_misc(m) }
        }
        if context.connected {
            move(into: m)
            let deadline = Clock.monotonic() + 1
            while mosquitto_socket(m) >= 0 && mosquitto_want_write(m) && Clock.monotonic() < deadline {
                _ = wait(socket: mosquitto_socket(m), wantWrite: true, timeout: 0.05)
                _ = mosquitto_loop_write(m, 1)
            }
            _ = mosquitto_disconnect_v5(m, 0, nil)
            _ = mosquitto_loop_write(m, 1)
        }
        finish(status: .disconnected("stopped"))
    }

    private func finish(status: Status) {
        shared.withLock { $0.status = status }
    }

    /// Options, credentials, TLS and the will: set before the first connect, never after.
    private func configure(_ m: OpaquePointer) throws(MQTTError) {
        try check("mosquitto_int_option(PROTOCOL_VERSION)", mosquitto_int_option(m, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5))
        if let user = options.username {
            try check("mosquitto_username_pw_set", mosquitto_username_pw_set(m, user, options.password))
        }
        if let tls = options.tls {
            if tls.caFile == nil {
                try check("mosquitto_int_option(TLS_USE_OS_CERTS)", mosquitto_int_option(m, MOSQ_OPT_TLS_USE_OS_CERTS, 1))
            }
            try check("mosquitto_tls_set", mosquitto_tls_set(m, tls.caFile, tls.caFile == nil ? "/etc/ssl/certs" : nil,
                                                               tls.certificateFile, tls.keyFile, nil))
        }
        if let will = options.will {
            let rc = will.payload.withUnsafeBytes { p in
                mosquitto_will_set_v5(m, will.topic, Int32(p.count), p.baseAddress, will.qos, will.retain, nil)
            }
            try check("mosquitto_will_set_v5", rc)
        }
    }

    /// Queued subscriptions and messages into libmosquitto (connected, on this thread).
    private func move(into m: OpaquePointer) {
        let (subscriptions, messages) = shared.withLock { s -> ([String], [MQTTMessage]) in
            defer { s.newSubscriptions = []; s.outbox = [] }
            return (s.newSubscriptions, s.outbox)
        }
        for filter in subscriptions {
            let rc = mosquitto_subscribe_v5(m, nil, filter, 1, Int32(MQTT_SUB_OPT_NO_LOCAL.rawValue), nil)
            if rc != Int32(MOSQ_ERR_SUCCESS.rawValue) { logger.warning("mqtt: \(MQTTError(call: "subscribe \(filter)", code: rc))") }
        }
        var sent = 0
        for message in messages where send(message, on: m) { sent += 1 }
        if sent > 0 { shared.withLock { $0.published += sent } }
    }

    private func send(_ message: MQTTMessage, on m: OpaquePointer) -> Bool {
        var properties: OpaquePointer? = nil
        defer { mosquitto_property_free_all(&properties) }
        if let correlation = message.correlationData {
            _ = correlation.withUnsafeBytes { mosquitto_property_add_binary(&properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue),
                                                                             $0.baseAddress, UInt16(min($0.count, 65535))) }
        }
        if let type = message.contentType {
            _ = mosquitto_property_add_string(&properties, Int32(MQTT_PROP_CONTENT_TYPE.rawValue), type)
        }
        if let response = message.responseTopic {
            _ = mosquitto_property_add_string(&properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), response)
        }
        let rc = message.payload.withUnsafeBytes { p in
            mosquitto_publish_v5(m, nil, message.topic, Int32(p.count), p.baseAddress, message.qos, message.retain, properties)
        }
        guard rc == Int32(MOSQ_ERR_SUCCESS.rawValue) else {
            logger.warning("mqtt: \(MQTTError(call: "publish \(message.topic)", code: rc))")
            return false
        }
        return true
    }

    private func installCallbacks(_ m: OpaquePointer) {
        mosquitto_log_callback_set(m) { _, obj, level, text in
            guard let obj, let text else { return }
            let client = Unmanaged<LoopContext>.fromOpaque(obj).takeUnretainedValue().client
            client.logger.debug("mqtt: libmosquitto: \(String(cString: text))")
            if ProcessInfo.processInfo.environment["MQTT_TRACE"] != nil { print("mosq[\(level)] \(String(cString: text))") }
        }
        mosquitto_connect_v5_callback_set(m) { _, obj, reason, _, _ in
            let context = Unmanaged<LoopContext>.fromOpaque(obj!).takeUnretainedValue()
            let client = context.client
            guard reason == 0 else {
                context.failure = "the broker refused the connection: \(String(cString: mosquitto_reason_string(reason))) (\(reason))"
                client.logger.warning("mqtt: \(context.failure)")
                return
            }
            context.connected = true
            client.shared.withLock { s in
                s.status = .connected
                s.connects += 1
                s.newSubscriptions = s.subscriptions  // a clean session: subscribe again
            }
            client.logger.info("mqtt: connected to \(client.options.host):\(client.options.port)")
            client.handlers.connected()
        }
        mosquitto_disconnect_v5_callback_set(m) { _, obj, rc, _ in
            let context = Unmanaged<LoopContext>.fromOpaque(obj!).takeUnretainedValue()
            let client = context.client
            let was = context.connected
            context.connected = false
            if rc != 0 {
                let why = rc == Int32(MOSQ_ERR_PROTOCOL.rawValue) && !was ? context.failure
                    : MQTTError(call: "connection to \(client.options.host):\(client.options.port)", code: rc).description
                context.failure = why
                client.shared.withLock { $0.status = .disconnected(why) }
                if was { client.logger.warning("mqtt: lost: \(why); reconnecting") }
            }
        }
        mosquitto_message_v5_callback_set(m) { _, obj, message, properties in
            guard let obj, let message else { return }
            let client = Unmanaged<LoopContext>.fromOpaque(obj).takeUnretainedValue().client
            let msg = message.pointee
            var m = MQTTMessage(topic: String(cString: msg.topic),
                                payload: msg.payloadlen > 0 ? Array(UnsafeRawBufferPointer(start: msg.payload, count: Int(msg.payloadlen))) : [],
                                qos: msg.qos, retain: msg.retain)
            var text: UnsafeMutablePointer<CChar>? = nil
            if mosquitto_property_read_string(properties, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), &text, false) != nil, let text {
                m.responseTopic = String(cString: text)
                free(text)
            }
            var data: UnsafeMutableRawPointer? = nil
            var length: UInt16 = 0
            if mosquitto_property_read_binary(properties, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &data, &length, false) != nil, let data {
                m.correlationData = Array(UnsafeRawBufferPointer(start: data, count: Int(length)))
                free(data)
            }
            client.shared.withLock { $0.received += 1 }
            client.handlers.message(m)
        }
    }
}
