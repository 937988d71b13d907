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
    /// a send to it (with `headers`) has gone out, and nothing else.
    static func sendHead(_ server: TestServer, _ headers: [String]) async throws -> (Conversation, RawConnection) {
        let conversation = try await server.createConversation(as: "alice")
        let connection = try await RawConnection.open(port: try #require(server.client.port))
        try await connection.send(
            head("POST", "/v1/conversations/\(conversation.id)/messages", token: try await server.token("alice"), headers))
        return (conversation, connection)
    }

    @Test func aDeclaredBodyOverTheLimitGets413BeforeItIsSent() async throws {
        try await TestServer.run { server in
            // 10 MB declared, not one byte of it sent: an answer now proves it was not read.
            let (conversation, connection) = try await Self.sendHead(
                server, ["Content-Type: application/json", "Content-Length: 10485760"])
            #expect(await connection.receive("\r\n\r\n", within: .seconds(10)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 413"), "\(connection.receivedText)")
            #expect(connection.receivedText.contains(#""code":"payload_too_large""#))
            #expect(await connection.closed(within: .seconds(10)), "the connection is closed rather than read to its end")
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
            #expect(await connection.receive("\r\n\r\n", within: .seconds(10)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 413"), "\(connection.receivedText.prefix(200))")
            #expect(sent < 1024 * 1024)
            #expect(await connection.closed(within: .seconds(10)))
        }
    }

    @Test func aClientTricklingItsHeadIsAnswered408AndCut() async throws {
        try await TestServer.run(configure: Self.quick) { server in
            let connection = try await RawConnection.open(port: try #require(server.client.port))
            let started = ContinuousClock.now
            let request = Self.head("GET", "/v1/conversations", token: try await server.token("alice"), [])
            // A byte every 200 ms: 5 bytes a second.
            for byte in request.prefix(40) {
                guard (try? await connection.send(String(byte))) != nil else { break }
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(await connection.closed(within: .seconds(10)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 408"), "\(connection.receivedText)")
            #expect(connection.receivedText.contains(#""code":"request_timeout""#))
            #expect(ContinuousClock.now - started < .seconds(5), "cut within the deadline (1 s) and a check interval")
        }
    }

    @Test func aClientTricklingItsBodyIsCut() async throws {
        try await TestServer.run(configure: Self.quick) { server in
            let (_, connection) = try await Self.sendHead(server, ["Content-Type: application/json", "Content-Length: 1000"])
            let started = ContinuousClock.now
            for _ in 0..<40 {
                guard (try? await connection.send("x")) != nil else { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(await connection.closed(within: .seconds(10)))
            #expect(connection.receivedText.hasPrefix("HTTP/1.1 408"), "\(connection.receivedText)")
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test func silentAndIdleConnectionsAreClosedButABusyOneIsNot() async throws {
        try await TestServer.run(configure: Self.quick) { server in
            let port = try #require(server.client.port)
            // Connected, nothing sent: closed after the idle timeout, without an answer.
            let silent = try await RawConnection.open(port: port)
            #expect(await silent.closed(within: .seconds(5)))
            #expect(silent.receivedText.isEmpty)
            // A kept-alive connection that answered a request, then idle: closed after 2 s.
            let idle = try await RawConnection.open(port: port)
            try await idle.send(Self.head("GET", "/healthz", token: "unused", []))
            #expect(await idle.receive("\r\n\r\n", within: .seconds(5)))
            #expect(idle.receivedText.hasPrefix("HTTP/1.1 200"))
            #expect(!(await idle.closed(within: .seconds(1))), "kept alive for the idle timeout")
            #expect(await idle.closed(within: .seconds(5)))
            // One that keeps asking stays open past every deadline.
            let busy = try await RawConnection.open(port: port)
            for _ in 0..<8 {
                try await busy.send(Self.head("GET", "/healthz", token: "unused", []))
                try await Task.sleep(for: .milliseconds(500))
            }
            // Every answer arrives (the last may still be on its way), and the connection is still open.
            let deadline = ContinuousClock.now + .seconds(10)
            while busy.receivedText.components(separatedBy: "HTTP/1.1 200").count - 1 < 8, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(busy.receivedText.components(separatedBy: "HTTP/1.1 200").count - 1 == 8)
            #expect(busy.channel.isActive)
            await busy.close()
        }
    }

    @Test func connectionsOverTheCapGet503WithRetryAfter() async throws {
        try await TestServer.run(configure: { configuration in
            configuration.connections.maxConnections = 3
        }) { server in
            let port = try #require(server.client.port)
            // The test client holds one connection; two more fill the cap.
            _ = try await server.request(.get, "/healthz")
            let held = [try await RawConnection.open(port: port), try await RawConnection.open(port: port)]
            try await Task.sleep(for: .milliseconds(200))
            let refused = try await RawConnection.open(port: port)
            try await refused.send(Self.head("GET", "/healthz", token: "unused", []))
            #expect(await refused.closed(within: .seconds(5)))
            #expect(refused.receivedText.hasPrefix("HTTP/1.1 503"), "\(refused.receivedText)")
            #expect(refused.receivedText.contains("Retry-After: 1\r\n"))
            #expect(refused.receivedText.contains(#""code":"service_unavailable""#))
            // A place freed is a place taken, once the server has seen the
            // close (on a busy machine that can take a while): until then a
            // new connection is refused, never left hanging.
            await held[0].close()
            let deadline = ContinuousClock.now + .seconds(10)
            var answers: [String] = []
            while ContinuousClock.now < deadline {
                let attempt = try await RawConnection.open(port: port)
                try await attempt.send(Self.head("GET", "/healthz", token: "unused", []))
                #expect(await attempt.receive("\r\n\r\n", within: .seconds(5)))
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
    }
}
