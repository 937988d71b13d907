import Foundation
import ScrollbackClient
import ScrollbackOffline

// A process of its own that uses the kit's offline store, for the tests
// that kill it (a phone app killed by the system) and start it again:
//
//   scrollback-offline-probe STORE SERVER TOKEN CONVERSATION USER send BODY...
//       writes each body to the feed's outbox, prints "queued N" once all
//       are on disk, then runs until the outbox is empty ("sent") or it is
//       killed.
//   scrollback-offline-probe STORE SERVER TOKEN CONVERSATION USER drain
//       starts a feed on the store and runs until its outbox is empty and
//       it is live ("sent", exit 0), for at most 60 s (exit 1).

let arguments = CommandLine.arguments
guard arguments.count >= 7, let id = UUID(uuidString: arguments[4]) else {
    FileHandle.standardError.write(Data("usage: scrollback-offline-probe STORE SERVER TOKEN CONVERSATION USER send BODY... | drain\n".utf8))
    exit(2)
}
let (path, server, token, user, command) = (arguments[1], arguments[2], arguments[3], arguments[5], arguments[6])

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

var client = ScrollbackClient(
    baseURL: server, retry: RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(50), maxDelay: .milliseconds(300)),
    token: { token })
client.completionQueue = nil
let feed = ConversationFeed(client: client, conversation: id, userId: user, storage: try OfflineStore(path: path))
feed.start()
if command == "send" {
    for body in arguments.dropFirst(7) { feed.send(body) { _ in } }
    // `send` has written the entry before it returns.
    say("queued \(feed.state.outbox.count)")
}
let deadline = ContinuousClock.now + .seconds(60)
while ContinuousClock.now < deadline {
    let state = feed.state
    if state.outbox.isEmpty, state.connection == .live {
        say("sent")
        exit(0)
    }
    try await Task.sleep(for: .milliseconds(50))
}
say("still waiting: \(feed.state.outbox.map(\.body))")
exit(1)
