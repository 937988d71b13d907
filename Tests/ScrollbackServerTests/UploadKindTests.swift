import Foundation
import HTTPTypes
import ScrollbackModels
@testable import ScrollbackServer
import ScrollbackStore
import ScrollbackTestSupport
import Testing

/// `SCROLLBACK_UPLOAD_KINDS`: the kinds of attachment an instance takes,
/// checked on the kind an upload declares and on the kind its bytes are.
@Suite struct UploadKindTests {
    static let secret = String(repeating: "s", count: 32)

    /// A name stored before bidirectional controls were refused is given
    /// without them, in both forms of `Content-Disposition`.
    @Test func aStoredNameIsDownloadedWithoutItsBidiControls() {
        let header = AttachmentDownload.contentDispositionFilename("invoice\u{202E}gnp\u{2066}.exe")
        #expect(header == "filename=\"invoicegnp.exe\"; filename*=UTF-8''invoicegnp.exe", "\(header)")
        let hebrew = AttachmentDownload.contentDispositionFilename("שלום.png")
        #expect(hebrew.contains("filename*=UTF-8''%D7%A9%D7%9C%D7%95%D7%9D.png"), "\(hebrew)")
    }

    @Test func everyKindIsTakenByDefault() throws {
        let configuration = try ScrollbackConfiguration(environment: [:])
        #expect(configuration.uploads.allowedKinds == [.image, .video, .file])
    }

    @Test(arguments: [
        ("image", [AttachmentKind.image]),
        ("image,file", [.image, .file]),
        (" Video , image ", [.video, .image]),
        ("file,file", [.file]),
        ("image,video,file", [.image, .video, .file]),
    ])
    func theKindsAreAList(_ text: String, _ kinds: [AttachmentKind]) throws {
        let configuration = try ScrollbackConfiguration(environment: ["SCROLLBACK_UPLOAD_KINDS": text])
        #expect(configuration.uploads.allowedKinds == Set(kinds))
    }

    @Test(arguments: ["audio", "image,", ",", "image;file", "images", "image,pdf"])
    func aKindNotKnownIsAStartupErrorNamingTheVariable(_ text: String) {
        do {
            _ = try ScrollbackConfiguration(environment: ["SCROLLBACK_UPLOAD_KINDS": text, "SCROLLBACK_JWT_SECRET": Self.secret])
            Issue.record("\(text) was taken")
        } catch let failure as ScrollbackConfiguration.Failure {
            #expect(
                failure.description
                    == "SCROLLBACK_UPLOAD_KINDS must be a comma-separated list of image, video and file, such as image,file (got \(text)).")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    static let pdf = Array("%PDF-1.4\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n".utf8)

    /// An instance set to take images only refuses a PDF when it is
    /// announced as one, and when its bytes turn out to be one; images
    /// still go through.
    @Test func anInstanceThatTakesImagesOnlyRefusesAPDF() async throws {
        try await TestServer.run(configure: { $0.uploads.allowedKinds = [.image] }) { server in
            let conversation = try await server.createConversation(as: "alice", members: ["bob"])
            let flow = UploadAPITests.Flow(server: server, conversation: conversation.id)
            func pendingUploads() async throws -> Int {
                try await server.store.values(Int.self, "SELECT count(*) FROM uploads WHERE uploader = 'alice'").first ?? -1
            }

            // Declared a PDF: refused when announced.
            let declared = try await flow.announce("report.pdf", "application/pdf", size: Self.pdf.count)
            #expect(declared.status == .unprocessableContent, "\(declared.text)")
            #expect(declared.headers[.contentType]?.hasPrefix("application/json") == true)
            let error = try declared.error().error
            #expect(error.code == .uploadKindNotAllowed)
            #expect(error.message.contains("image uploads only") && error.message.contains("application/pdf"))
            // A video too.
            let video = try await flow.announce("clip.mp4", "video/mp4", size: 1_000)
            #expect(try video.error().error.code == .uploadKindNotAllowed)
            #expect(try await pendingUploads() == 0)

            // Declared as nothing in particular, the bytes are a PDF: refused once they arrive, and discarded.
            let vague = try await flow.upload("report", "application/octet-stream", Self.pdf)
            let put = try await flow.put(vague, Self.pdf)
            #expect(put.status == .unprocessableContent, "\(put.text)")
            #expect(try put.error().error.code == .uploadKindNotAllowed)
            #expect(put.text.contains("application/pdf"))
            #expect(try await server.request(.get, vague.uploadURL, as: "alice").status == .notFound)
            #expect(try await pendingUploads() == 0)
            let send = try await flow.send("", attachments: [vague.uploadId])
            #expect(try send.error().error.code == .invalidAttachments)

            // An image goes through, declared or not.
            let png = UploadAPITests.png(width: 3, height: 2)
            for contentType in ["image/png", "application/octet-stream"] {
                let image = try await flow.upload("dot.png", contentType, png)
                let stored = try await flow.put(image, png)
                #expect(stored.status == .ok, "\(stored.text)")
                #expect(try stored.decode(UploadProgress.self).attachment?.kind == .image)
                #expect(try await flow.send("", attachments: [image.uploadId]).status == .created)
            }
        }
    }

    /// The default takes every kind: the same PDF is a file.
    @Test func theDefaultTakesAPDFAsAFile() async throws {
        try await UploadAPITests.withFlow { flow in
            let ticket = try await flow.upload("report.pdf", "application/pdf", Self.pdf)
            let put = try await flow.put(ticket, Self.pdf)
            #expect(put.status == .ok, "\(put.text)")
            #expect(try put.decode(UploadProgress.self).attachment?.kind == .file)
        }
    }
}
