import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback in front of a server, that can lose answers: with
/// `loseNextAnswer(to:)` the answer to the next request that starts with the
/// given bytes (say `POST `) is dropped and its connection closed (the
/// request reached the server, the client never hears of it); other
/// connections, such as a live stream's, are untouched. With
/// `holdRequests(startingWith:)` connections whose request starts so (say a
/// live stream's `GET /v1/stream`) hang unanswered while other requests
/// pass. `cutAll()` closes every connection at once.
// Unchecked: every mutable field is read and written only under `lock`; the
// sockets are plain file descriptors used by the threads that own them.
final class CuttingProxy: @unchecked Sendable {
    let port: Int
    private var upstreamPort: Int
    private let listener: Int32
    private let lock = NSLock()
    private var loseNextTo: [UInt8]?
    private var holdPrefix: [UInt8]?
    private var countPrefix: [UInt8]?
    private var counted = 0
    private var swallowing = false
    private var held: [Int32] = []
    private var open: [ObjectIdentifier: Pair] = [:]
    private var stopped = false

    /// One proxied connection: the client's socket and the server's. Both
    /// are closed once, when both directions have ended, so a descriptor
    /// number is never shut down or written after it may have been reused.
    private final class Pair: @unchecked Sendable {
        // Unchecked: `ended`, `closed`, `loseAnswer` and `holding` are changed only under the proxy's lock.
        let client: Int32
        let server: Int32
        var ended = 0
        var closed = false
        var loseAnswer = false
        var holding = false

        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }
    }

    init(upstreamPort: Int) throws {
        self.upstreamPort = upstreamPort
        let listening = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listening, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listening, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listening, 64) == 0 else { throw ProxyError.cannotListen }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listening, $0, &length) }
        }
        listener = listening
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    enum ProxyError: Error { case cannotListen }

    /// Arms the loss of one answer: that of the next request whose first
    /// bytes are `prefix`, on whichever connection it comes.
    func loseNextAnswer(to prefix: String) { lock.withLock { loseNextTo = Array(prefix.utf8) } }

    /// New connections go to `port` (a load balancer moving a client to
    /// another instance); open ones stay where they are.
    func route(to port: Int) { lock.withLock { upstreamPort = port } }

    /// How many connections `swallowNewConnections` holds.
    var heldConnections: Int { lock.withLock { held.count + open.values.count { $0.holding && !$0.closed } } }

    /// From now on, a connection whose first bytes are `prefix` is neither
    /// forwarded nor closed by the proxy, like a backend that stopped
    /// answering it; every other connection is forwarded.
    func holdRequests(startingWith prefix: String) { lock.withLock { holdPrefix = Array(prefix.utf8) } }

    /// From now on, counts the connections whose first bytes are `prefix`
    /// (say a live stream's upgrade, `GET /v1/stream`): `countedConnections`.
    func countConnections(startingWith prefix: String) { lock.withLock { countPrefix = Array(prefix.utf8) } }

    var countedConnections: Int { lock.withLock { counted } }

    /// Later connections are forwarded again; those already held stay hung.
    func stopSwallowingButKeepHeld() { lock.withLock { swallowing = false } }

    /// New connections are accepted and then neither forwarded nor closed,
    /// like a server that stopped answering; `false` releases them (closed).
    func swallowNewConnections(_ on: Bool) {
        let release = lock.withLock { () -> [Int32] in
            swallowing = on
            guard !on else { return [] }
            defer { held = [] }
            return held
        }
        for socket in release { close(socket) }
    }

    func cutAll() {
        lock.withLock {
            for pair in open.values where !pair.closed {
                shutdown(pair.client, Int32(SHUT_RDWR))
                shutdown(pair.server, Int32(SHUT_RDWR))
            }
        }
    }

    func stop() {
        swallowNewConnections(false)
        lock.withLock { stopped = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        cutAll()
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                // A connection reset before it was accepted (or an interrupt):
                // keep accepting until stopped.
                if lock.withLock({ stopped }) { return }
                continue
            }
            let swallowed = lock.withLock { () -> Bool in
                if swallowing { held.append(client) }
                return swallowing
            }
            if swallowed { continue }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: UInt16(lock.withLock { upstreamPort }))
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(client)
                close(server)
                continue
            }
            let pair = Pair(client: client, server: server)
            lock.withLock { open[ObjectIdentifier(pair)] = pair }
            Thread.detachNewThread { [self] in pump(pair, from: client, to: server, answers: false) }
            Thread.detachNewThread { [self] in pump(pair, from: server, to: client, answers: true) }
        }
    }

    private func pump(_ pair: Pair, from source: Int32, to destination: Int32, answers: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var first = true
        while true {
            let count = read(source, &buffer, buffer.count)
            if count <= 0 { break }
            let starts = { (prefix: [UInt8]) in count >= prefix.count && Array(buffer[0..<prefix.count]) == prefix }
            let (drop, hold) = lock.withLock { () -> (Bool, Bool) in
                if answers { return (pair.loseAnswer, false) }
                if first, let prefix = holdPrefix, starts(prefix) { pair.holding = true }
                if first, let prefix = countPrefix, starts(prefix) { counted += 1 }
                if let prefix = loseNextTo, starts(prefix) {
                    loseNextTo = nil
                    pair.loseAnswer = true
                }
                return (false, pair.holding)
            }
            first = false
            if drop { break }
            // Held: what the client sends is read and dropped until it hangs up.
            if hold { continue }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + written, count - written) }
                if result <= 0 { break }
                written += result
            }
            if written < count { break }
        }
        lock.withLock {
            // The other direction ends too; its descriptors are still ours.
            if !pair.closed {
                shutdown(pair.client, Int32(SHUT_RDWR))
                shutdown(pair.server, Int32(SHUT_RDWR))
            }
            pair.ended += 1
            if pair.ended == 2 {
                close(pair.client)
                close(pair.server)
                pair.closed = true
                open[ObjectIdentifier(pair)] = nil
            }
        }
    }
}
