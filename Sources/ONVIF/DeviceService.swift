// The device service (ONVIF Core, /onvif/device_service): who the device is, its clock, its
// network interfaces, and where its other services are. What it does not do is answered
// ter:ActionNotSupported by the server.

import Foundation
import SOAP

enum DeviceService {
    static func operations(_ device: any ONVIFDevice, events: EventBroker, push: Bool) -> [String: Operation] {
        return [
            "GetSystemDateAndTime": Operation(access: .preAuth) { _, c in
                tds("GetSystemDateAndTimeResponse", [XMLElement(ONVIFNamespace.device, "SystemDateAndTime", [
                    tt("DateTimeType", "NTP"),  // the host's clock, kept by the host: not settable here
                    tt("DaylightSavings", false),
                    tt("TimeZone", [tt("TZ", "UTC0")]),
                    dateTime("UTCDateTime", c.now),
                    dateTime("LocalDateTime", c.now),
                ])])
            },
            "GetCapabilities": Operation(access: .preAuth) { (request: XMLElement, c: ONVIFContext) async throws(SOAPFault) -> XMLElement in
                let category = request.children("Category").map(\.trimmedText)
                let wanted = { (name: String) in category.isEmpty || category.contains("All") || category.contains(name) }
                var caps: [XMLElement] = []
                if wanted("Device") { caps.append(deviceCapabilities(c)) }
                if wanted("Events") { caps.append(tt("Events", [tt("XAddr", "\(c.base)/onvif/events_service"),
                                                                 tt("WSSubscriptionPolicySupport", false),
                                                                 tt("WSPullPointSupport", true),
                                                                 tt("WSPausableSubscriptionManagerInterfaceSupport", false)])) }
                if wanted("Imaging") { caps.append(tt("Imaging", [tt("XAddr", "\(c.base)/onvif/imaging_service")])) }
                if wanted("Media") { caps.append(mediaCapabilities(c)) }
                if wanted("PTZ") { caps.append(tt("PTZ", [tt("XAddr", "\(c.base)/onvif/ptz_service")])) }
                guard !caps.isEmpty else {
                    throw SOAPFault(.receiver, [QName(ONVIFNamespace.error, "ActionNotSupported"), QName(ONVIFNamespace.error, "NoSuchService")],
                                    "This device has no \(category.joined(separator: ", ")) service.")
                }
                return tds("GetCapabilitiesResponse", [tds("Capabilities", caps)])
            },
            "GetServices": Operation(access: .preAuth) { request, c in
                let include = request.child("IncludeCapability")?.trimmedText == "true"
                func service(_ ns: String, _ path: String, _ minor: Int, _ capabilities: XMLElement) -> XMLElement {
                    var s = tds("Service", [XMLElement(ONVIFNamespace.device, "Namespace", text: ns),
                                            XMLElement(ONVIFNamespace.device, "XAddr", text: "\(c.base)/onvif/\(path)")])
                    if include { s.children.append(tds("Capabilities", [capabilities])) }
                    s.children.append(tds("Version", [tt("Major", 2), tt("Minor", minor)]))
                    return s
                }
                return tds("GetServicesResponse", [
                    service(ONVIFNamespace.device, "device_service", 60, deviceServiceCapabilities()),
                    service(ONVIFNamespace.media, "media_service", 60, MediaService.serviceCapabilities()),
                    service(ONVIFNamespace.media2, "media2_service", 60, Media2Service.capabilities()),
                    service(ONVIFNamespace.events, "events_service", 60, EventsService.capabilities(events, push: push)),
                    service(ONVIFNamespace.ptz, "ptz_service", 60, PTZService.capabilities()),
                    service(ONVIFNamespace.imaging, "imaging_service", 60, ImagingService.capabilities()),
                ])
            },
            "GetServiceCapabilities": Operation(access: .preAuth) { _, _ in
                tds("GetServiceCapabilitiesResponse", [deviceServiceCapabilities()])
            },
            "GetDeviceInformation": Operation(access: .read) { _, _ in
                let i = await device.information()
                return XMLElement(ONVIFNamespace.device, "GetDeviceInformationResponse", [
                    XMLElement(ONVIFNamespace.device, "Manufacturer", text: i.manufacturer),
                    XMLElement(ONVIFNamespace.device, "Model", text: i.model),
                    XMLElement(ONVIFNamespace.device, "FirmwareVersion", text: i.firmwareVersion),
                    XMLElement(ONVIFNamespace.device, "SerialNumber", text: i.serialNumber),
                    XMLElement(ONVIFNamespace.device, "HardwareId", text: i.hardwareId),
                ])
            },
            "GetHostname": Operation(access: .preAuth) { _, _ in
                tds("GetHostnameResponse", [tds("HostnameInformation", [tt("FromDHCP", false), tt("Name", device.hostname())])])
            },
            "GetNetworkInterfaces": Operation(access: .read) { _, c in
                tds("GetNetworkInterfacesResponse", device.interfaces(c).map { i in
                    tds("NetworkInterfaces", [
                        tt("Enabled", true),
                        tt("Info", [tt("Name", i.name), tt("HwAddress", i.mac), tt("MTU", i.mtu)]),
                        tt("IPv4", [tt("Enabled", !i.ipv4.isEmpty), tt("Config", i.ipv4.map { a in
                            tt("Manual", [tt("Address", a.address), tt("PrefixLength", a.prefixLength)])
                        } + [tt("DHCP", false)])]),
                    ]).withAttribute("token", i.name)
                })
            },
            "GetScopes": Operation(access: .read) { _, _ in
                let scopes = ONVIFScopes.fixed.map { ("Fixed", $0) } + (await device.scopes()).map { ("Configurable", $0) }
                return tds("GetScopesResponse", scopes.map { def, item in tds("Scopes", [tt("ScopeDef", def), tt("ScopeItem", item)]) })
            },
            "GetUsers": Operation(access: .operate) { _, _ in
                tds("GetUsersResponse", device.users().map { u in tds("User", [tt("Username", u.name), tt("UserLevel", u.level)]) })
            },
        ]
    }

    static func tds(_ name: String, _ children: [XMLElement]) -> XMLElement { XMLElement(ONVIFNamespace.device, name, children) }

    static func dateTime(_ name: String, _ now: Double) -> XMLElement {
        var t = time_t(now)
        var tm = tm()
        gmtime_r(&t, &tm)
        return tt(name, [tt("Time", [tt("Hour", Int(tm.tm_hour)), tt("Minute", Int(tm.tm_min)), tt("Second", Int(tm.tm_sec))]),
                         tt("Date", [tt("Year", Int(tm.tm_year) + 1900), tt("Month", Int(tm.tm_mon) + 1), tt("Day", Int(tm.tm_mday))])])
    }

    static func deviceCapabilities(_ c: ONVIFContext) -> XMLElement {
        tt("Device", [
            tt("XAddr", "\(c.base)/onvif/device_service"),
            tt("Network", [tt("IPFilter", false), tt("ZeroConfiguration", false), tt("IPVersion6", false), tt("DynDNS", false)]),
            tt("System", [tt("DiscoveryResolve", false), tt("DiscoveryBye", false), tt("RemoteDiscovery", false),
                          tt("SystemBackup", false), tt("SystemLogging", false), tt("FirmwareUpgrade", false),
                          tt("SupportedVersions", [tt("Major", 2), tt("Minor", 60)])]),
            tt("Security", [tt("TLS1.1", false), tt("TLS1.2", c.secure), tt("OnboardKeyGeneration", false),
                            tt("AccessPolicyConfig", false), tt("X.509Token", false), tt("SAMLToken", false),
                            tt("KerberosToken", false), tt("RELToken", false)]),
        ])
    }

    static func mediaCapabilities(_ c: ONVIFContext) -> XMLElement {
        tt("Media", [
            tt("XAddr", "\(c.base)/onvif/media_service"),
            tt("StreamingCapabilities", [tt("RTPMulticast", false), tt("RTP_TCP", true), tt("RTP_RTSP_TCP", true)]),
        ])
    }

    static func deviceServiceCapabilities() -> XMLElement {
        XMLElement(ONVIFNamespace.device, "Capabilities", [
            XMLElement(ONVIFNamespace.device, "Network", attributes: ["IPFilter": "false", "ZeroConfiguration": "false", "IPVersion6": "false", "DynDNS": "false"]),
            XMLElement(ONVIFNamespace.device, "Security", attributes: ["UsernameToken": "true", "HttpDigest": "true", "TLS1.2": "false"]),
            XMLElement(ONVIFNamespace.device, "System", attributes: ["DiscoveryResolve": "false", "DiscoveryBye": "false", "RemoteDiscovery": "false",
                                                                     "SystemBackup": "false", "SystemLogging": "false", "FirmwareUpgrade": "false"]),
        ])
    }
}

extension XMLElement {
    func withAttribute(_ name: String, _ value: String) -> XMLElement {
        var e = self
        e.attributes[QName("", name)] = value
        return e
    }
}
