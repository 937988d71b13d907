import Foundation
import NIOConcurrencyHelpers
import OpenCombineShim
import ScrollbackClient
import ScrollbackClientCombine
import ScrollbackModels
import ScrollbackTestSupport
import Testing

@Suite struct UploadPublisherTests {
    /// Progress, then the attachment, then the end; nothing before the
    /// subscription.
    @Test func anUploadPublisherReportsProgressThenItsAttachment() async throws {
        try await LiveCluster.run { cluster in
            let requests = NIOLockedValueBox(0)
            let alice = PublisherTests.counting(cluster, requests)
            let id = try await alice.createConversation().id
            var bytes: [UInt8] = [0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x40, 0x01, 0xF0, 0x00, 0x00, 0x00, 0x00]
            bytes += [UInt8](repeating: 0x3B, count: ScrollbackClient.uploadPieceBytes + 10 - bytes.count)
            let publisher = alice.publishers.upload(Data(bytes), filename: "wave.gif", contentType: "image/gif", to: id)
            let before = requests.withLockedValue { $0 }
            try await Task.sleep(for: .milliseconds(200))
            #expect(requests.withLockedValue { $0 } == before, "the upload started before it was subscribed")

            let events = NIOLockedValueBox<[UploadEvent]>([])
            let box = NIOLockedValueBox<AnyCancellable?>(nil)
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let cancellable = publisher.sink(
                    receiveCompletion: { completion in
                        switch completion {
                        case .finished: continuation.resume()
                        case .failure(let error): continuation.resume(throwing: error)
                        }
                    },
                    receiveValue: { event in events.withLockedValue { $0.append(event) } })
                box.withLockedValue { $0 = cancellable }
            }
            let seen = events.withLockedValue { $0 }
            let total = Int64(bytes.count)
            let progress = seen.compactMap { event -> Int64? in
                if case .progress(let report) = event { return report.sent } else { return nil }
            }
            #expect(progress == [0, Int64(ScrollbackClient.uploadPieceBytes), total])
            guard case .finished(let attachment)? = seen.last else {
                Issue.record("the last event is not the attachment: \(seen)")
                return
            }
            #expect(attachment.kind == .image && attachment.width == 320 && attachment.height == 240)
        }
    }
}
