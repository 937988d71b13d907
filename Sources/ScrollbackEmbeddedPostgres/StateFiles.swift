import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The state folder and the files in it (secrets, the owner file, the
/// cluster's folders), handled so that nothing in them is ever open to other
/// users, even for a moment:
///
/// - a file is written to a new name in the same folder, created owner-only
///   with `O_CREAT | O_EXCL | O_NOFOLLOW`, flushed, then linked or renamed
///   into place; never created with the default mode and narrowed after;
/// - a file is read without following a link, and refused when it is open to
///   other users or belongs to someone else;
/// - a folder is created with mode 0700, and an existing one refused when it
///   is a link, belongs to someone else, or others can write to it.
///
/// Every refusal says how to fix it.
public enum StateFiles {
    /// The secret stored at `path`, or a new random one (64 hex digits) written
    /// there, owner-only. The folder is created (mode 0700) when missing.
    public static func readOrCreateSecret(at path: String) throws -> String {
        let path = withoutTrailingSlashes(path)
        try prepareDirectory(folder(of: path), role: .stateDirectory)
        let existing = try readPrivateFile(at: path).map(trimmed)
        if let existing, !existing.isEmpty { return existing }
        let secret = newSecret()
        // `link` never replaces, so of two processes starting together one
        // secret wins and both use it. An empty file (an older write cut
        // short) is replaced.
        if try publish(secret + "\n", at: path, replacing: existing != nil) { return secret }
        guard let winner = try readPrivateFile(at: path).map(trimmed), !winner.isEmpty else {
            throw EmbeddedPostgres.LaunchError(description: "\(path) appeared while it was being written, empty")
        }
        return winner
    }

    /// Writes `text` to `path`, replacing what is there (but never through a
    /// link), owner-only; `owner` is given the file before it takes its name.
    static func write(_ text: String, to path: String, owner: (uid: uid_t, gid: gid_t)? = nil) throws {
        _ = try publish(text, at: withoutTrailingSlashes(path), replacing: true, owner: owner)
    }

    /// Writes `text` to a new file next to `path` and gives it that name:
    /// `rename` when `replacing`, else `link`, which returns false when
    /// something is already there. The new file is created owner-only and
    /// exclusively (a link or a file already at its name is never used), and
    /// handed to `owner` before it takes its name. `temporaryName`,
    /// `afterCreating` (the moment `open` has returned, before anything is
    /// written) and `beforePublishing` let the tests see the new file before
    /// it is named.
    static func publish(
        _ text: String, at path: String, replacing: Bool, owner: (uid: uid_t, gid: gid_t)? = nil,
        temporaryName: () -> String = { ".tmp-" + UUID().uuidString },
        afterCreating: (String) throws -> Void = { _ in },
        beforePublishing: (String) throws -> Void = { _ in }
    ) throws -> Bool {
        let folder = folder(of: path)
        if replacing, let defect = defect(at: path, kind: .file), defect != .missing {
            throw refusal(path, defect, role: .stateFile)
        }
        var temporary = ""
        var descriptor: Int32 = -1
        for _ in 0..<8 where descriptor < 0 {
            temporary = folder + "/" + temporaryName()
            descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            if descriptor < 0 && errno != EEXIST { throw failure("could not create", temporary) }
        }
        guard descriptor >= 0 else { throw failure("could not create a new file next to", path) }
        var named = false
        defer {
            close(descriptor)
            if !named { unlink(temporary) }
        }
        try afterCreating(temporary)
        // The mode asked of open() is narrowed by the umask, never widened; this
        // makes it exactly 0600 whatever the umask.
        guard fchmod(descriptor, 0o600) == 0 else { throw failure("could not set the mode of", temporary) }
        if let owner, fchown(descriptor, owner.uid, owner.gid) != 0 {
            throw failure("could not hand to the PostgreSQL account", temporary)
        }
        try writeAll(Array(text.utf8), to: descriptor, path: temporary)
        guard fsync(descriptor) == 0 else { throw failure("could not flush", temporary) }
        try beforePublishing(temporary)
        if replacing {
            guard rename(temporary, path) == 0 else { throw failure("could not write", path) }
            named = true
        } else {
            let linked = link(temporary, path) == 0
            if !linked && errno != EEXIST { throw failure("could not write", path) }
            unlink(temporary)
            named = true
            if !linked { return false }
        }
        syncFolder(folder)
        return true
    }

    /// The text of a state file, or nil when there is none; refused when it is
    /// a link, not a plain file, belongs to another user or is open to others.
    static func readPrivateFile(at path: String) throws -> String? {
        let path = withoutTrailingSlashes(path)
        guard let descriptor = try openChecked(path, kind: .file, role: .stateFile) else { return nil }
        defer { close(descriptor) }
        return try readAll(descriptor, path: path)
    }

    /// The text of a plain file that another account writes (the cluster's
    /// pid file and log), read without following a link; nil when there is
    /// none or it cannot be read.
    static func readPlainFile(at path: String) -> String? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return try? readAll(descriptor, path: path)
    }

    /// Appends `text` to a plain file that belongs to `owner` (the cluster's
    /// postgresql.conf, made by initdb), never through a link.
    static func append(_ text: String, to path: String, owner: uid_t) throws {
        guard let descriptor = try openChecked(path, kind: .file, role: .clusterFolder, owners: [owner], access: O_WRONLY | O_APPEND)
        else { throw failure("could not open", path) }
        defer { close(descriptor) }
        try writeAll(Array(text.utf8), to: descriptor, path: path)
    }

    // MARK: - Folders

    /// What a folder is to Scrollback, which decides how a refusal reads.
    enum Role {
        /// The state folder the user chose (`SCROLLBACK_STATE_DIR`).
        case stateDirectory
        /// A file in the state folder.
        case stateFile
        /// A folder Scrollback makes for the cluster itself (its data
        /// directory, or the folder under /var/tmp that holds it).
        case clusterFolder
    }

    /// Makes sure `path` is a private folder: created with mode 0700 when
    /// missing (with its parents); when it exists, refused unless it is a real
    /// folder (not a link) that belongs to one of `owners` and that nobody
    /// else can write to. Then `owner` and `mode` are set on it, when given.
    static func prepareDirectory(
        _ path: String, role: Role, owners: [uid_t] = [geteuid()], owner: (uid: uid_t, gid: gid_t)? = nil,
        mode: mode_t? = nil
    ) throws {
        let path = withoutTrailingSlashes(path)
        if defect(at: path, kind: .directory) == .missing {
            let parent = folder(of: path)
            if parent != path {
                try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
            }
            if mkdir(path, 0o700) != 0 && errno != EEXIST { throw failure("could not create the folder", path) }
        }
        guard let descriptor = try openChecked(path, kind: .directory, role: role, owners: owners) else {
            throw failure("could not open the folder", path)
        }
        defer { close(descriptor) }
        if let owner, fchown(descriptor, owner.uid, owner.gid) != 0 {
            throw failure("could not hand to the PostgreSQL account", path)
        }
        if let mode, fchmod(descriptor, mode) != 0 { throw failure("could not set the mode of", path) }
    }

    // MARK: - Checks

    enum Kind {
        case file, directory
    }

    /// What is wrong with what stands at a path, for Scrollback's use.
    enum Defect: Equatable {
        case missing
        case symbolicLink(to: String?)
        case wrongKind
        case foreignOwner(uid_t)
        /// Others may read or write a file, or write into a folder.
        case openToOthers(mode_t)
    }

    /// Opens what is at `path` without following a link and checks it; nil
    /// when nothing is there. A FIFO does not block the open (`O_NONBLOCK`).
    static func openChecked(
        _ path: String, kind: Kind, role: Role, owners: [uid_t] = [geteuid()], access: Int32 = O_RDONLY
    ) throws -> Int32? {
        let flags = access | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (kind == .directory ? O_DIRECTORY : 0)
        let descriptor = open(path, flags)
        guard descriptor >= 0 else {
            let error = errno
            let found = defect(at: path, kind: kind)
            if found == .missing { return nil }
            if let found { throw refusal(path, found, role: role) }
            throw failure("could not open", path, errno: error)
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            close(descriptor)
            throw failure("could not inspect", path)
        }
        if let found = defect(of: info, kind: kind, owners: owners) {
            close(descriptor)
            throw refusal(path, found, role: role)
        }
        return descriptor
    }

    /// What `lstat` finds wrong at `path`, without the owner and mode checks
    /// of an open file: nothing there, a link, or the wrong kind.
    static func defect(at path: String, kind: Kind) -> Defect? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return errno == ENOENT ? .missing : nil }
        if info.st_mode & S_IFMT == S_IFLNK { return .symbolicLink(to: resolved(path)) }
        return info.st_mode & S_IFMT == (kind == .directory ? S_IFDIR : S_IFREG) ? nil : .wrongKind
    }

    /// What is wrong with an opened file or folder: its kind, its owner, or
    /// its mode (a file must be its owner's alone; a folder only must not be
    /// writable by others, so the postgres account can be let through one).
    static func defect(of info: stat, kind: Kind, owners: [uid_t]) -> Defect? {
        guard info.st_mode & S_IFMT == (kind == .directory ? S_IFDIR : S_IFREG) else { return .wrongKind }
        guard owners.contains(info.st_uid) else { return .foreignOwner(info.st_uid) }
        let mode = info.st_mode & 0o7777
        return mode & (kind == .directory ? 0o022 : 0o077) == 0 ? nil : .openToOthers(mode)
    }

    // MARK: - Messages

    static func refusal(_ path: String, _ defect: Defect, role: Role) -> EmbeddedPostgres.LaunchError {
        let me = accountName(geteuid())
        let what: String
        switch role {
        case .stateDirectory: what = "The state folder \(path)"
        case .stateFile: what = "The state file \(path)"
        case .clusterFolder: what = "\(path), meant for the embedded PostgreSQL cluster,"
        }
        let problem: String
        let fix: String
        switch defect {
        case .missing:
            problem = "is missing"
            fix = "Start again."
        case .symbolicLink(let target):
            problem = "is a symbolic link" + (target.map { " to \($0)" } ?? "") + ", which Scrollback does not follow there"
            switch (role, target) {
            case (.stateDirectory, let target?): fix = "Use the folder itself: SCROLLBACK_STATE_DIR=\(target)."
            case (.stateFile, let target?): fix = "Put the file itself in its place: mv \(target) \(path)"
            default: fix = "Remove the link (rm \(path)) and start again."
            }
        case .wrongKind:
            problem = role == .stateFile ? "is not a plain file" : "is not a folder"
            fix = "Move it out of the way (mv \(path) \(path).old) and start again."
        case .foreignOwner(let uid):
            problem = "belongs to \(describe(uid)), not to \(describe(geteuid())), who runs Scrollback"
            fix = role == .clusterFolder ? removal(path) : "If it is yours to use, run: chown \(me) \(path)"
        case .openToOthers(let mode):
            let octal = "0" + String(mode, radix: 8)
            problem = role == .stateFile
                ? "can be read or written by other users (mode \(octal)); it must be its owner's alone"
                : "can be written by other users (mode \(octal))"
            switch role {
            case .stateFile: fix = "Run: chmod 600 \(path)"
            case .stateDirectory: fix = "Run: chmod 700 \(path)"
            case .clusterFolder: fix = removal(path)
            }
        }
        return EmbeddedPostgres.LaunchError(description: "\(what) \(problem). \(fix)")
    }

    /// The fix for a cluster folder Scrollback did not make: it is never
    /// adopted, since whoever made it could read or swap the cluster's data.
    private static func removal(_ path: String) -> String {
        """
        Scrollback did not make it, so it will not keep the cluster there. Remove it once you know nothing in it \
        is needed (rm -rf \(path)) and start again, or set SCROLLBACK_STATE_DIR to a folder the postgres account \
        can enter.
        """
    }

    /// The login name of `uid`, or the number when it has none.
    private static func accountName(_ uid: uid_t) -> String {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &found) == 0, found != nil, let name = entry.pw_name
        else { return "\(uid)" }
        return String(cString: name)
    }

    private static func describe(_ uid: uid_t) -> String {
        let name = accountName(uid)
        return name == "\(uid)" ? "uid \(uid)" : "\(name) (uid \(uid))"
    }

    static func failure(_ action: String, _ path: String, errno error: Int32 = errno) -> EmbeddedPostgres.LaunchError {
        EmbeddedPostgres.LaunchError(description: "\(action) \(path): \(String(cString: strerror(error)))")
    }

    // MARK: - Helpers

    static func readAll(_ descriptor: Int32, path: String) throws -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count == 0 { break }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("could not read", path)
            }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { systemWrite(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw failure("could not write", path)
            }
            offset += count
        }
    }

    /// Makes a new name in `folder` survive a crash.
    private static func syncFolder(_ folder: String) {
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    private static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    private static func trimmed(_ text: String) -> String { text.trimmingCharacters(in: .whitespacesAndNewlines) }

    private static func resolved(_ path: String) -> String? {
        guard let pointer = realpath(path, nil) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// A trailing slash would make the system follow a final link.
    static func withoutTrailingSlashes(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    static func folder(of path: String) -> String {
        let folder = (path as NSString).deletingLastPathComponent
        return folder.isEmpty ? "." : folder
    }
}

/// write(2), which `StateFiles.write` hides inside the enum.
private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
