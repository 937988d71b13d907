import Foundation

/// This machine's loopback addresses, for the commands that refuse to act
/// beyond it unless told to (the demo server, the load test).
public enum Loopback {
    /// Whether `host` names this machine: `localhost`, `::1` (with or
    /// without brackets) or an IPv4 address in 127.0.0.0/8.
    public static func contains(_ host: String) -> Bool {
        let bare = host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")).lowercased()
        if bare == "localhost" || bare == "::1" { return true }
        let octets = bare.split(separator: ".", omittingEmptySubsequences: false).compactMap { UInt8($0) }
        return octets.count == 4 && octets[0] == 127
    }
}
