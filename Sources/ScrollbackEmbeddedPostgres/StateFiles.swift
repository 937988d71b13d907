import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Secrets kept in the state folder: generated once, readable by the owner only.
public enum StateFiles {
    /// The secret stored at `path`, or a new random one (64 hex digits) written there.
    public static func readOrCreateSecret(at path: String) throws -> String {
        if let existing = try? String(contentsOfFile: path, encoding: .utf8) {
            let trimmed = existing.trimmingCharacters(in: .whitespacesAndNewlines)
            if !trimmed.isEmpty { return trimmed }
        }
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        try write(secret + "\n", to: path, mode: 0o600)
        return secret
    }

    static func write(_ text: String, to path: String, mode: mode_t) throws {
        let created = FileManager.default.createFile(
            atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: Int(mode)])
        guard created else { throw EmbeddedPostgres.LaunchError(description: "could not write \(path)") }
        chmod(path, mode)
    }
}
