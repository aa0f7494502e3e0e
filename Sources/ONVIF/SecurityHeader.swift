// The WS-Security header's UsernameToken, read from a SOAP request's header blocks. Absent
// is nil (an anonymous caller); present but malformed is a fault that says what is missing.

import SOAP

enum SecurityHeader {
    static func credentials(_ header: [XMLElement]) throws(SOAPFault) -> ONVIFCredentials? {
        guard let security = header.first(where: { $0.name == QName(ONVIFNamespace.security, "Security") }) else { return nil }
        guard let token = security.children.first(where: { $0.name == QName(ONVIFNamespace.security, "UsernameToken") }) else {
            throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "NotAuthorized")],
                            "Sender not Authorized: the Security header has no UsernameToken (the only sign-in this device takes).")
        }
        guard let user = token.child("Username"), let password = token.child("Password") else {
            throw SOAPFault(.sender, [QName(ONVIFNamespace.error, "NotAuthorized")],
                            "Sender not Authorized: a UsernameToken needs a Username and a Password.")
        }
        let type = password.attribute("Type") ?? ""
        return ONVIFCredentials(username: user.trimmedText, password: password.trimmedText,
                                isDigest: type == ONVIFNamespace.passwordDigest,
                                nonce: token.child("Nonce")?.trimmedText,
                                created: token.child("Created")?.trimmedText)  // wsu:Created; some clients use wsse's
    }
}
