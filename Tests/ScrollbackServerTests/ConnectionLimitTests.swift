import Foundation
import NIOWebSocket
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// What one client can hold of the server: a huge body is refused unread,
/// a slow or silent client is cut off, and connections and sockets over
/// their caps are refused clearly. Seen byte by byte, on real sockets.
@Suite struct ConnectionLimitTests {
    /// Short deadlines, so the tests wait seconds rather than minutes.
    static func quick(_ configuration: inout ScrollbackConfiguration) {
        configuration.connections.headerTimeout = .seconds(1)
        configuration.connections.bodyTimeout = .seconds(1)
        configuration.connections.minReceiveRate = 1_000
        configuration.connections.idleTimeout = .seconds(2)
    }

    static func head(_ method: String, _ path: String, token: String, _ headers: [String]) -> String {
        ([ "\(method) \(path) HTTP/1.1", "Host: 127.0.0.1", "Authorization: Bearer \(token)"] + headers)
            .joined(separator: "\r\n") + "\r\n\r\n"
    }

    /// A conversation of alice's, and a raw connection on which the head of
    /// a send to it (with `headers`) has gone out, and nothing else. The
    /// head is ready before the connection opens: a connection that waits
    /// for its first byte longer than the idle timeout is closed, rightly.
    static func sendHead(_ server: TestServer, _ headers: [String]) async throws -> (Conversation, RawConnection) {
        let conversation = try await server.createConversation(as: "alice")
        let request = head(
            "POST", "/v1/conversations/\(conversation.id)/messages", token: try await server.token("alice"), headers)
        let connection = try await RawConnection.open(port: try #require(server.client.port))
        try await connection.send(request)
        return (conversation, connection)
    }

    /// Sends `bytes` one at a time, `every` apart, until the server closes
    /// the connection; returns how many went out. The deadlines are checked
    /// by what the server did, not by the clock: a busy machine may delay
    /// the cut, never make it happen earlier.
    static func trickle(_ bytes: some Collection<Character>, on connection: RawConnection, every: Duration) async throws
        -> Int
    {
        var sent = 0
        for byte in bytes {
            guard connection.channel.isActive, (try? await connection.send(String(byte))) != nil else { break }
            sent += 1
            try await Task.sleep(for: every)
        }
        return sent
    }

    @Test func aDeclaredBodyOverTheLimitGets413BeforeItIsSent() async throws {
        try await TestServer.run { server in
            // 10 MB declared, not one byte of it sent: an answer now proves it was not read.
            let (conversation, connection) = try await Self.sendHead(
                server, ["Content-Type: application/json", "Content-Length: 10485760"])
            #expect(await connection.receive("\r\n\r\n", within: .seconds(30)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 413"), "\(connection.receivedText)")
            #expect(connection.receivedText.contains(#""code":"payload_too_large""#))
            #expect(await connection.closed(within: .seconds(30)), "the connection is closed rather than read to its end")
            let page = try await server.store.page(of: conversation.id, for: "alice", anchor: .newest, limit: 10)
            #expect(page.messages.isEmpty)
        }
    }

    @Test func aChunkedBodyIsCutAtTheLimit() async throws {
        try await TestServer.run { server in
            let (_, connection) = try await Self.sendHead(
                server, ["Content-Type: application/json", "Transfer-Encoding: chunked"])
            let chunk = String(repeating: "x", count: 16 * 1024)
            var sent = 0
            // Chunks until the server answers: it must before 1 MB.
            while sent < 1024 * 1024, !connection.receivedText.contains("\r\n\r\n") {
                do {
                    try await connection.send(String(chunk.count, radix: 16) + "\r\n" + chunk + "\r\n")
                } catch {
                    break  // closed: the answer is in
                }
                sent += chunk.count
                try await Task.sleep(for: .milliseconds(5))
            }
            #expect(await connection.receive("\r\n\r\n", within: .seconds(30)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 413"), "\(connection.receivedText.prefix(200))")
            #expect(sent < 1024 * 1024)
            #expect(await connection.closed(within: .seconds(30)))
        }
    }

    /// A chunked body streamed at full speed to routes that never read a
    /// body (typing, answered 204; a removal refused 401 before anything is
    /// read; a GET) is cut at about the limit: the connection is closed
    /// while the client still sends, not read to its end (Hummingbird would
    /// read and discard the rest of it, however long, and then wait for the
    /// next request). The server keeps serving.
    @Test func aChunkedBodyIsCutOnRoutesThatNeverReadIt() async throws {
        try await TestServer.run { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let token = try await server.token("alice")
            let port = try #require(server.client.port)
            let chunked = ["Content-Type: application/json", "Transfer-Encoding: chunked"]
            let requests = [
                ("typing", Self.head("POST", "/v1/conversations/\(conversation.id)/typing", token: token, chunked), "204"),
                ("401", Self.head("DELETE", "/v1/conversations/\(conversation.id)/members/bob", token: "x", chunked), "401"),
                ("GET", Self.head("GET", "/healthz", token: token, chunked), "200"),
            ]
            let chunk = String(repeating: "x", count: 64 * 1024)
            let framed = String(chunk.count, radix: 16) + "\r\n" + chunk + "\r\n"
            // Far more than the 64 KiB limit plus what the sockets' buffers hold.
            let total = 64 * 1024 * 1024
            for (name, request, ownAnswer) in requests {
                let connection = try await RawConnection.open(port: port)
                try await connection.send(request)
                var sent = 0
                while sent < total, (try? await connection.send(framed)) != nil { sent += chunk.count }
                // The body never ends: a server reading it would wait for more.
                #expect(sent < total, "\(name): all \(sent) bytes were taken")
                #expect(await connection.closed(within: .seconds(30)), "\(name): still open after \(sent) bytes")
                // One answer: the 413, or the route's own when it came first.
                let answer = connection.receivedText
                let status = answer.dropFirst("HTTP/1.1 ".count).prefix(3)
                #expect(answer.isEmpty || [ownAnswer, "413"].contains(String(status)), "\(name): \(answer.prefix(200))")
                if status == "413" { #expect(answer.contains(#""code":"payload_too_large""#), "\(name)") }
                #expect(answer.components(separatedBy: "HTTP/1.1 ").count <= 2, "\(name): \(answer.prefix(400))")
            }
            #expect(try await server.request(.get, "/healthz").status == .ok)
            let members = try await server.store.conversation(conversation.id, for: "alice").members
            #expect(members == ["alice", "bob"], "the refused removal did nothing")
        }
    }

    /// `SCROLLBACK_MAX_BODY_BYTES` moves the limit for declared and chunked
    /// bodies alike: 20 KB, under the default limit (where this body is a
    /// 422 for its length), is over a limit of 16 KiB.
    @Test func theBodyLimitIsConfigurable() async throws {
        try await TestServer.run(configure: { $0.connections.maxBodyBytes = 16 * 1024 }) { server in
            let conversation = try await server.createConversation(as: "alice")
            let path = "/v1/conversations/\(conversation.id)/messages"
            // About 8 KB: under the limit.
            #expect(try await server.send(String(repeating: "é", count: 4_000), to: conversation.id, as: "alice").status == .created)
            let large = #"{"body": "\#(String(repeating: "x", count: 20_000))"}"#

            let (other, connection) = try await Self.sendHead(
                server, ["Content-Type: application/json", "Transfer-Encoding: chunked"])
            let half = String(large.prefix(10_000))
            for part in [half, String(large.dropFirst(10_000))] {
                _ = try? await connection.send(String(part.utf8.count, radix: 16) + "\r\n" + part + "\r\n")
            }
            #expect(await connection.receive("\r\n\r\n", within: .seconds(30)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 413"), "\(connection.receivedText.prefix(200))")
            #expect(connection.receivedText.contains("16 KiB"))
            #expect(await connection.closed(within: .seconds(30)))

            // Last on the test client's one connection, which a 413 closes.
            let declared = try await server.request(.post, path, as: "alice", rawBody: large)
            #expect(declared.status == .contentTooLarge, "\(declared.text)")
            #expect(try declared.error().error.message == "The request body must be at most 16 KiB.")
            #expect(declared.headers[.connection] == "close")
            for id in [conversation.id, other.id] {
                let page = try await server.store.page(of: id, for: "alice", anchor: .newest, limit: 10)
                #expect(page.messages.map(\.body.count) == (id == conversation.id ? [4_000] : []), "only the message under the limit was stored")
            }
        }
    }

    /// Framing that cannot be read (RFC 9112 section 6.3): where the body
    /// ends cannot be told, so the request is answered 400 at once, whether
    /// it is the connection's first or follows one answered, the connection
    /// is closed, and nothing is logged as an error (a client's mistake).
    @Test(arguments: [
        "POST /v1/conversations HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello",
        "POST /v1/conversations HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "POST /v1/conversations HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n",
        "HELLO THERE\r\n\r\n",
    ])
    func malformedFramingIsAnswered400AtOnceAndClosed(_ request: String) async throws {
        let log = CapturedLog()
        try await TestServer.run(log: log) { server in
            let port = try #require(server.client.port)
            for earlier in ["", "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"] {
                let connection = try await RawConnection.open(port: port)
                if !earlier.isEmpty {
                    try await connection.send(earlier)
                    #expect(await connection.receive(#"{"status":"ok"}"#, within: .seconds(30)))
                }
                try await connection.send(request)
                // The header deadline (10 s) would answer 408: a 400 is the framing's.
                #expect(await connection.closed(within: .seconds(30)), "\(connection.receivedText)")
                let answers = connection.receivedText.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
                #expect(answers == (earlier.isEmpty ? ["400"] : ["200", "400"]), "\(connection.receivedText)")
                #expect(connection.receivedText.contains(#""code":"bad_request""#))
            }
            // The server goes on serving.
            let after = try await server.request(.get, "/v1/conversations", as: "alice")
            #expect(after.status == .ok)
        }
        #expect(log.messages(at: .error).isEmpty && log.messages(at: .critical).isEmpty, "\(log.messages(at: .error))")
    }

    @Test func aClientTricklingItsHeadIsAnswered408AndCut() async throws {
        try await TestServer.run(configure: Self.quick) { server in
            let request = Self.head("GET", "/v1/conversations", token: try await server.token("alice"), [])
            let connection = try await RawConnection.open(port: try #require(server.client.port))
            // A byte every 200 ms (5 bytes a second), all but the head's last,
            // for 40 s or more, far past the 1 s head deadline: cut while it
            // still trickles, however late a busy machine enforces it.
            let trickled = request.dropLast()
            #expect(trickled.count >= 200)
            let sent = try await Self.trickle(trickled, on: connection, every: .milliseconds(200))
            #expect(sent < trickled.count, "cut while trickling its head")
            #expect(await connection.closed(within: .seconds(30)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 408"), "\(connection.receivedText)")
            #expect(connection.receivedText.contains(#""code":"request_timeout""#))
        }
    }

    @Test func aClientTricklingItsBodyIsCut() async throws {
        try await TestServer.run(configure: Self.quick) { server in
            let (_, connection) = try await Self.sendHead(server, ["Content-Type: application/json", "Content-Length: 1000"])
            // 10 bytes a second for 99 s or more, under the 1,000 bytes a
            // second asked for after 1 s, and never the whole body.
            let sent = try await Self.trickle(repeatElement("x", count: 999), on: connection, every: .milliseconds(100))
            #expect(sent < 999, "cut while trickling its body")
            #expect(await connection.closed(within: .seconds(30)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 408"), "\(connection.receivedText)")
        }
    }

    @Test func silentAndIdleConnectionsAreClosedButABusyOneIsNot() async throws {
        let idleTimeout = Duration.seconds(2)
        try await TestServer.run(configure: Self.quick) { server in
            let port = try #require(server.client.port)
            // Connected, nothing sent: closed after the idle timeout (never
            // before it, by the test's clock), without an answer.
            let opened = ContinuousClock.now
            let silent = try await RawConnection.open(port: port)
            #expect(await silent.closed(within: .seconds(30)))
            #expect(ContinuousClock.now - opened >= idleTimeout, "kept for the idle timeout")
            #expect(silent.receivedText.isEmpty)
            // A kept-alive connection that answered a request, then idle:
            // closed, and not before the idle timeout after the request.
            let idle = try await RawConnection.open(port: port)
            let asked = ContinuousClock.now
            try await idle.send(Self.head("GET", "/healthz", token: "unused", []))
            #expect(await idle.receive("\r\n\r\n", within: .seconds(30)))
            #expect(idle.receivedText.hasPrefix("HTTP/1.1 200"))
            #expect(await idle.closed(within: .seconds(30)))
            #expect(ContinuousClock.now - asked >= idleTimeout, "kept alive for the idle timeout")
            // One that keeps asking, 300 ms after each answer, stays open
            // past every deadline (1 s, 1 s, 2 s). Closing it is a fault only
            // when it was idle less than the idle timeout by the test's
            // clock: a stalled test may leave it idle longer, rightly.
            let busy = try await RawConnection.open(port: port)
            func answered() -> Int { busy.receivedText.components(separatedBy: "HTTP/1.1 200").count - 1 }
            var answers = 0
            var lastAsked = ContinuousClock.now
            while answers < 10 {
                try await Task.sleep(for: .milliseconds(300))
                let now = ContinuousClock.now
                guard busy.channel.isActive, (try? await busy.send(Self.head("GET", "/healthz", token: "unused", []))) != nil
                else {
                    #expect(now - lastAsked >= idleTimeout, "closed after \(now - lastAsked) idle, \(answers) answers")
                    break
                }
                let previous = lastAsked
                lastAsked = now
                let deadline = ContinuousClock.now + .seconds(30)
                while answered() <= answers, busy.channel.isActive, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(10))
                }
                // Closed with this request unanswered: it crossed the idle
                // close, which is a fault only if the connection had been idle
                // less than the idle timeout when it was sent.
                if answered() <= answers, !busy.channel.isActive {
                    #expect(now - previous >= idleTimeout, "closed after \(now - previous) idle, \(answers) answers")
                    break
                }
                answers += 1
            }
            #expect(answered() == answers)
            await busy.close()
        }
    }

    @Test func connectionsOverTheCapGet503WithRetryAfter() async throws {
        try await TestServer.run(configure: { configuration in
            configuration.connections.maxConnections = 3
        }) { server in
            let port = try #require(server.client.port)
            // The test client holds one connection; two more fill the cap,
            // each counted once it has been answered.
            _ = try await server.request(.get, "/healthz")
            var held: [RawConnection] = []
            for _ in 0..<2 {
                let connection = try await RawConnection.open(port: port)
                try await connection.send(Self.head("GET", "/healthz", token: "unused", []))
                #expect(await connection.receive("\r\n\r\n", within: .seconds(30)))
                try #require(connection.receivedText.hasPrefix("HTTP/1.1 200"), "\(connection.receivedText)")
                held.append(connection)
            }
            let refused = try await RawConnection.open(port: port)
            try await refused.send(Self.head("GET", "/healthz", token: "unused", []))
            #expect(await refused.closed(within: .seconds(30)))
            #expect(refused.receivedText.hasPrefix("HTTP/1.1 503"), "\(refused.receivedText)")
            #expect(refused.receivedText.contains("Retry-After: 1\r\n"))
            #expect(refused.receivedText.contains(#""code":"service_unavailable""#))
            // A place freed is a place taken, once the server has seen the
            // close (on a busy machine that can take a while): until then a
            // new connection is refused, never left hanging.
            await held[0].close()
            let deadline = ContinuousClock.now + .seconds(30)
            var answers: [String] = []
            while ContinuousClock.now < deadline {
                let attempt = try await RawConnection.open(port: port)
                try await attempt.send(Self.head("GET", "/healthz", token: "unused", []))
                #expect(await attempt.receive("\r\n\r\n", within: .seconds(30)))
                answers.append(attempt.receivedText)
                await attempt.close()
                if attempt.receivedText.hasPrefix("HTTP/1.1 200") { break }
                #expect(attempt.receivedText.hasPrefix("HTTP/1.1 503"), "\(attempt.receivedText)")
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(answers.last?.hasPrefix("HTTP/1.1 200") == true, "\(answers)")
            await held[1].close()
        }
    }

    @Test func aSocketOutlivesTheRequestDeadlinesAndSocketsOverTheCapClose1013() async throws {
        var options = LiveOptions()
        options.maxSockets = 1
        try await LiveCluster.run(options: options, configure: Self.quick) { cluster in
            let first = try await cluster.connect("alice")
            // Longer than the head, body and idle deadlines: a socket is not a slow request.
            try await Task.sleep(for: .seconds(3))
            try first.send(.ping)
            #expect(try await first.next() == .pong)
            // Read byte by byte: the close follows the 101 at once, and a
            // WebSocket client library may lose what comes with the 101.
            let second = try await RawStreamConnection.exchange(
                port: cluster.instances[0].port, headers: [("Authorization", "Bearer \(try await cluster.token("bob"))")])
            #expect(second.head.hasPrefix("HTTP/1.1 101"), "\(second.head)")
            #expect(second.frames.map(\.opcode) == [.connectionClose], "\(second.frames)")
            var close = try #require(second.frames.first).data
            #expect(close.readInteger(as: UInt16.self) == UInt16(StreamCloseCode.tryAgainLater))
            #expect(cluster.instances[0].live.counters.refusedForCapacity == 1)
            first.close()
        }
    }

    @Test func theRequestTimerCutsOnlyWhatIsLateAndExemptsSockets() {
        let limits = RequestTimer.Limits(
            headerTimeout: .seconds(10), bodyTimeout: .seconds(10), minReceiveRate: 100, idleTimeout: .seconds(60))
        // A fresh connection that sends nothing is closed without an answer after the idle timeout.
        var timer = RequestTimer(limits: limits, now: .zero)
        #expect(timer.verdict(now: .seconds(60)) == .keep)
        #expect(timer.verdict(now: .seconds(61)) == .close)
        // A head that began but is not whole 10 s after its first byte: 408.
        timer = RequestTimer(limits: limits, now: .zero)
        timer.read(bytes: 10, now: .seconds(50))
        #expect(timer.verdict(now: .seconds(59)) == .keep)
        #expect(timer.verdict(now: .seconds(61)) == .timeOut)
        // A body at 100 bytes a second is fine; slower is cut after 10 s.
        timer = RequestTimer(limits: limits, now: .zero)
        timer.read(bytes: 200, now: .seconds(1))
        timer.headReceived(now: .seconds(1))
        for second in 2...30 {
            timer.read(bytes: 100, now: .seconds(second))
            #expect(timer.verdict(now: .seconds(second)) == .keep, "\(second)")
        }
        #expect(timer.verdict(now: .seconds(40)) == .timeOut)
        // Whole: the server's time is not the client's.
        timer.requestEnded(now: .seconds(31))
        #expect(timer.verdict(now: .seconds(500)) == .keep)
        // Answered: idle, closed quietly after the idle timeout; the next head has its own deadline.
        timer.responseEnded(now: .seconds(500))
        #expect(timer.verdict(now: .seconds(559)) == .keep)
        #expect(timer.verdict(now: .seconds(561)) == .close)
        timer.read(bytes: 5, now: .seconds(555))
        #expect(timer.verdict(now: .seconds(564)) == .keep)
        #expect(timer.verdict(now: .seconds(566)) == .timeOut)
        // An early answer (a refusal) before the body is read: a slow rest is closed without another answer.
        timer = RequestTimer(limits: limits, now: .zero)
        timer.headReceived(now: .zero)
        timer.responseEnded(now: .zero)
        #expect(timer.verdict(now: .seconds(20)) == .close)
        // A socket: never.
        timer = RequestTimer(limits: limits, now: .zero)
        timer.headReceived(now: .zero)
        timer.exempt()
        timer.requestEnded(now: .seconds(1))
        #expect(timer.verdict(now: .seconds(10_000)) == .keep)
        #expect(!timer.isIdle)
    }

    /// What a graceful shutdown may close at once: a connection no request
    /// is using (new, kept alive, or with a head still arriving), never one
    /// whose request the server has or is answering.
    @Test func aConnectionIsIdleOnlyWhenNoRequestIsWithTheServer() {
        let limits = RequestTimer.Limits(
            headerTimeout: .seconds(10), bodyTimeout: .seconds(10), minReceiveRate: 100, idleTimeout: .seconds(60))
        var timer = RequestTimer(limits: limits, now: .zero)
        #expect(timer.isIdle)
        timer.read(bytes: 10, now: .seconds(1))
        #expect(timer.isIdle, "a head still arriving")
        timer.headReceived(now: .seconds(2))
        #expect(!timer.isIdle, "a body arriving")
        timer.requestEnded(now: .seconds(3))
        #expect(!timer.isIdle, "being answered")
        timer.responseEnded(now: .seconds(4))
        #expect(timer.isIdle, "kept alive")
    }

    /// A graceful shutdown (SIGTERM) is not held up by clients that hold a
    /// connection without a request: one that sent nothing, one whose head
    /// is still arriving, one kept alive after its answer. Each is closed
    /// and the server stops, long before the idle (1 hour here) and head
    /// (1 minute) deadlines would have closed them. The server in front of
    /// the live stream is the one tested: its connections begin behind the
    /// WebSocket upgrade handler.
    @Test func aGracefulShutdownClosesConnectionsThatNoRequestIsUsing() async throws {
        try await LiveCluster.run(configure: { $0.connections.headerTimeout = .seconds(60) }) { cluster in
            let port = cluster.instances[0].port
            let silent = try await RawConnection.open(port: port)
            let partial = try await RawConnection.open(port: port)
            try await partial.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            let keptAlive = try await RawConnection.open(port: port)
            try await keptAlive.send(Self.head("GET", "/healthz", token: "unused", []))
            #expect(await keptAlive.receive("\r\n\r\n", within: .seconds(30)))
            try await Task.sleep(for: .milliseconds(200))
            let stopping = ContinuousClock.now
            try await cluster.restart(0)  // a graceful stop given up (and failed) after 60 s
            #expect(ContinuousClock.now - stopping < .seconds(30), "stopped after \(ContinuousClock.now - stopping)")
            for (name, connection) in [("silent", silent), ("partial", partial), ("kept alive", keptAlive)] {
                #expect(await connection.closed(within: .seconds(30)), "\(name) still open")
            }
            #expect(silent.receivedText.isEmpty && partial.receivedText.isEmpty)
        }
    }
}
