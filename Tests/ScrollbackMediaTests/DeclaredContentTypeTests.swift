import ScrollbackMedia
import Testing

@Suite struct DeclaredContentTypeTests {
    @Test func theFormatsOwnTypeAndItsAliasesAreAccepted() {
        let accepted: [(MediaFormat, String)] = [
            (.png, "image/png"), (.png, "IMAGE/PNG"), (.png, "image/png; charset=binary"), (.png, "image/x-png"),
            (.jpeg, "image/jpeg"), (.jpeg, "image/jpg"), (.jpeg, "image/pjpeg"),
            (.gif, "image/gif"), (.webp, "image/webp"),
            (.plainText, "text/plain"), (.plainText, "text/plain; charset=UTF-8"),
            (.mp3, "audio/mpeg"), (.mp3, "audio/mp3"),
            (.zip, "application/x-zip-compressed"), (.pdf, "application/pdf"),
            (.heif, "image/heic"), (.wav, "audio/x-wav"), (.matroska, "video/x-matroska"),
        ]
        for (format, declared) in accepted {
            #expect(format.accepts(declaredContentType: declared), "\(format) as \(declared)")
        }
    }

    @Test func declaringNothingClaimsNothing() {
        for format in MediaFormat.allCases {
            #expect(format.accepts(declaredContentType: ""))
            #expect(format.accepts(declaredContentType: "application/octet-stream"))
        }
    }

    @Test func nearRelativesClientsMixUpAreAccepted() {
        let accepted: [(MediaFormat, String)] = [
            (.mp4, "video/quicktime"), (.quickTime, "video/mp4"), (.m4a, "video/mp4"), (.threeGPP, "video/mp4"),
            (.webm, "video/x-matroska"), (.matroska, "video/webm"), (.webm, "audio/webm"),
            (.oggAudio, "application/ogg"), (.oggVideo, "audio/ogg"),
            (.html, "text/plain"), (.svg, "text/plain"), (.svg, "text/xml"), (.xml, "text/plain"), (.plainText, "text/html"),
            (.octetStream, "text/plain"), (.octetStream, "audio/mpeg"),
        ]
        for (format, declared) in accepted {
            #expect(format.accepts(declaredContentType: declared), "\(format) as \(declared)")
        }
    }

    @Test func typesTheModuleDoesNotKnowFitGenericBytesOnly() {
        let accepted: [(MediaFormat, String)] = [
            (.plainText, "text/csv"), (.plainText, "application/json"), (.plainText, "text/markdown"),
            (.xml, "application/rss+xml"),
            (.zip, "application/vnd.openxmlformats-officedocument.wordprocessingml.document"), (.zip, "application/epub+zip"),
            (.octetStream, "image/bmp"), (.octetStream, "application/vnd.ms-excel"), (.octetStream, "image/tiff"),
        ]
        for (format, declared) in accepted {
            #expect(format.accepts(declaredContentType: declared), "\(format) as \(declared)")
        }
        let refused: [(MediaFormat, String)] = [
            (.png, "image/bmp"), (.jpeg, "application/x-anything"), (.plainText, "image/bmp"), (.zip, "text/csv"),
            (.mp4, "video/x-flv"), (.pdf, "application/msword"),
        ]
        for (format, declared) in refused {
            #expect(!format.accepts(declaredContentType: declared), "\(format) as \(declared)")
        }
    }

    @Test func aDeclarationTheBytesContradictIsRefused() {
        let refused: [(MediaFormat, String)] = [
            (.html, "image/png"), (.svg, "image/png"), (.plainText, "image/jpeg"), (.jpeg, "image/png"),
            (.png, "image/gif"), (.octetStream, "image/png"), (.octetStream, "application/pdf"),
            (.pdf, "text/plain"), (.zip, "application/pdf"), (.mp4, "video/webm"), (.webp, "image/svg+xml"),
            (.plainText, "image/svg+xml"), (.octetStream, "video/mp4"), (.mp3, "audio/wav"),
        ]
        for (format, declared) in refused {
            #expect(!format.accepts(declaredContentType: declared), "\(format) as \(declared)")
        }
    }

    @Test func aDeclaredTypeNamesAFormat() {
        #expect(MediaFormat(declaredContentType: "image/jpg") == .jpeg)
        #expect(MediaFormat(declaredContentType: " Image/PNG ; q=1") == .png)
        #expect(MediaFormat(declaredContentType: "text/plain;charset=utf-8") == .plainText)
        #expect(MediaFormat(declaredContentType: "image/bmp") == nil)
        for format in MediaFormat.allCases {
            #expect(MediaFormat(declaredContentType: format.contentType) == format)
        }
    }
}
