import ScrollbackMedia
import Testing

/// Bytes and what they must be recognised as.
struct SniffCase: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var format: MediaFormat
    var testDescription: String { "\(name) → \(format)" }

    init(_ name: String, _ bytes: [UInt8], _ format: MediaFormat) {
        self.name = name
        self.bytes = bytes
        self.format = format
    }
}

enum Containers {
    /// An ftyp box: size, "ftyp", major brand, minor version, compatible brands.
    static func ftyp(_ major: String, _ compatible: [String] = []) -> [UInt8] {
        let body = ascii(major) + [0, 0, 2, 0] + compatible.flatMap(ascii)
        return bigEndian32(8 + body.count) + ascii("ftyp") + body + bigEndian32(8) + ascii("free")
    }

    /// An EBML header: EBMLVersion 1, ..., DocType, DocTypeVersion, then a Segment.
    static func ebml(docType: String) -> [UInt8] {
        let elements: [UInt8] =
            [0x42, 0x86, 0x81, 0x01]  // EBMLVersion 1
            + [0x42, 0xF7, 0x81, 0x01]  // EBMLReadVersion 1
            + [0x42, 0xF2, 0x81, 0x04]  // EBMLMaxIDLength 4
            + [0x42, 0xF3, 0x81, 0x08]  // EBMLMaxSizeLength 8
            + [0x42, 0x82, 0x80 | UInt8(docType.utf8.count)] + ascii(docType)
            + [0x42, 0x87, 0x81, 0x04]  // DocTypeVersion 4
        return [0x1A, 0x45, 0xDF, 0xA3, 0x80 | UInt8(elements.count)] + elements
            + [0x18, 0x53, 0x80, 0x67, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
    }

    /// The first Ogg page (beginning of stream) with one packet.
    static func ogg(firstPacket: [UInt8]) -> [UInt8] {
        ascii("OggS") + [0, 0x02] + [UInt8](repeating: 0, count: 8) + littleEndian32(0x1234) + littleEndian32(0)
            + littleEndian32(0) + [1, UInt8(firstPacket.count)] + firstPacket
    }

    /// Two MPEG-1 Layer III frames at 128 kbit/s, 44.1 kHz: 417 bytes each.
    static var mp3Frames: [UInt8] {
        let header: [UInt8] = [0xFF, 0xFB, 0x90, 0x64]
        let frame = header + [UInt8](repeating: 0x55, count: 413)
        return frame + frame
    }

    static func riff(_ form: String, _ chunk: String) -> [UInt8] {
        ascii("RIFF") + littleEndian32(100) + ascii(form) + ascii(chunk) + littleEndian32(16)
            + [UInt8](repeating: 1, count: 16)
    }
}

@Suite struct MediaSnifferTests {
    static let binaryCases: [SniffCase] = [
        SniffCase("PNG", Build.png(width: 2, height: 2), .png),
        SniffCase("JPEG", Build.JPEG(width: 2, height: 2).bytes, .jpeg),
        SniffCase("GIF87a", Build.gif(version: "87a", width: 2, height: 2), .gif),
        SniffCase("GIF89a", Build.gif(version: "89a", width: 2, height: 2), .gif),
        SniffCase("WebP VP8", Build.webpLossy(width: 2, height: 2), .webp),
        SniffCase("WebP VP8L", Build.webpLossless(width: 2, height: 2), .webp),
        SniffCase("WebP VP8X", Build.webpExtended(width: 2, height: 2), .webp),
        SniffCase("PDF", ascii("%PDF-1.7\n%\u{E2}\u{E3}\n1 0 obj"), .pdf),
        SniffCase("ZIP", [0x50, 0x4B, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0] + ascii("word/document.xml"), .zip),
        SniffCase("empty ZIP", [0x50, 0x4B, 0x05, 0x06] + [UInt8](repeating: 0, count: 18), .zip),
        SniffCase("spanned ZIP", [0x50, 0x4B, 0x07, 0x08, 0x50, 0x4B, 0x03, 0x04], .zip),
        SniffCase("MP4 isom", Containers.ftyp("isom", ["isom", "iso2", "avc1", "mp41"]), .mp4),
        SniffCase("MP4 mp42", Containers.ftyp("mp42", ["mp42", "isom"]), .mp4),
        SniffCase("MP4 dash", Containers.ftyp("dash", ["iso6", "mp41"]), .mp4),
        SniffCase("M4V", Containers.ftyp("M4V ", ["M4V ", "M4A ", "mp42", "isom"]), .mp4),
        SniffCase("QuickTime", Containers.ftyp("qt  ", ["qt  "]), .quickTime),
        SniffCase("QuickTime without ftyp", bigEndian32(8) + ascii("wide") + bigEndian32(1000) + ascii("mdat"), .quickTime),
        SniffCase("QuickTime moov first", bigEndian32(0x1000) + ascii("moov") + bigEndian32(108) + ascii("mvhd"), .quickTime),
        SniffCase("3GPP", Containers.ftyp("3gp4", ["isom", "3gp4"]), .threeGPP),
        SniffCase("3GPP2", Containers.ftyp("3g2a", ["3g2a"]), .threeGPP2),
        SniffCase("M4A", Containers.ftyp("M4A ", ["M4A ", "mp42", "isom"]), .m4a),
        SniffCase("HEIC", Containers.ftyp("heic", ["mif1", "heic"]), .heif),
        SniffCase("HEIF mif1", Containers.ftyp("mif1", ["mif1", "heic"]), .heif),
        SniffCase("AVIF", Containers.ftyp("avif", ["avif", "mif1", "miaf"]), .avif),
        SniffCase("AVIF under mif1", Containers.ftyp("mif1", ["mif1", "avif"]), .avif),
        SniffCase("Canon raw in ISO boxes", Containers.ftyp("crx ", ["crx ", "isom"]), .octetStream),
        SniffCase("JPEG 2000 in ISO boxes", Containers.ftyp("jp2 ", ["jp2 "]), .octetStream),
        SniffCase("WebM", Containers.ebml(docType: "webm"), .webm),
        SniffCase("Matroska", Containers.ebml(docType: "matroska"), .matroska),
        SniffCase("unknown EBML", Containers.ebml(docType: "x-other"), .octetStream),
        SniffCase("Ogg Vorbis", Containers.ogg(firstPacket: [0x01] + ascii("vorbis") + [0, 0, 0, 0]), .oggAudio),
        SniffCase("Ogg Opus", Containers.ogg(firstPacket: ascii("OpusHead") + [1, 2]), .oggAudio),
        SniffCase("Ogg FLAC", Containers.ogg(firstPacket: [0x7F] + ascii("FLAC") + [1, 0]), .oggAudio),
        SniffCase("Ogg Theora", Containers.ogg(firstPacket: [0x80] + ascii("theora") + [3, 2]), .oggVideo),
        SniffCase("Ogg skeleton", Containers.ogg(firstPacket: ascii("fishead\0") + [3, 0]), .ogg),
        SniffCase("WAV", Containers.riff("WAVE", "fmt "), .wav),
        SniffCase("WAV in big-endian RIFX", ascii("RIFX") + Array(Containers.riff("WAVE", "fmt ").dropFirst(4)), .wav),
        SniffCase("WAV in RF64", ascii("RF64") + [0xFF, 0xFF, 0xFF, 0xFF] + Array(Containers.riff("WAVE", "ds64").dropFirst(8)), .wav),
        SniffCase("AVI", Containers.riff("AVI ", "LIST"), .avi),
        SniffCase("unknown RIFF", Containers.riff("CDXA", "fmt "), .octetStream),
        SniffCase("FLAC", ascii("fLaC") + [0, 0, 0, 0x22] + [UInt8](repeating: 0, count: 34), .flac),
        SniffCase("MP3 with ID3v2.3", ascii("ID3") + [3, 0, 0, 0, 0, 0x02, 0x01] + Containers.mp3Frames, .mp3),
        SniffCase("MP3 with ID3v2.4", ascii("ID3") + [4, 0, 0, 0, 0, 0, 0x10] + [UInt8](repeating: 0, count: 16), .mp3),
        SniffCase("MP3 frames", Containers.mp3Frames, .mp3),
        SniffCase("one MP3 frame header alone", Array(Containers.mp3Frames.prefix(418)), .octetStream),
        SniffCase("ID3 with a bad size byte", ascii("ID3") + [3, 0, 0, 0x80, 0, 0, 0], .octetStream),
        SniffCase("empty", [], .octetStream),
        SniffCase("random binary", [0x00, 0x01, 0x02, 0xFE, 0x9C, 0x42], .octetStream),
        SniffCase("ELF", [0x7F] + ascii("ELF") + [2, 1, 1, 0], .octetStream),
    ]

    @Test(arguments: binaryCases) func binaryFormatsAreRecognisedByTheirSignatures(sniff: SniffCase) {
        #expect(MediaSniffer.sniff(sniff.bytes, isWholeFile: true) == sniff.format)
        // A prefix of a longer file is the same format (C3 would start a character of text).
        if !sniff.bytes.isEmpty { #expect(MediaSniffer.sniff(sniff.bytes + [0xC3], isWholeFile: false) == sniff.format) }
    }

    static let markupCases: [SniffCase] = [
        SniffCase("bare svg", ascii("<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>"), .svg),
        SniffCase("svg after XML declaration", ascii("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg width=\"10\">"), .svg),
        SniffCase(
            "svg after BOM, comment, doctype",
            [0xEF, 0xBB, 0xBF]
                + ascii(
                    "<?xml version='1.0'?>\n<!-- Generator: Illustrator -->\n<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
                        + "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n<svg version=\"1.1\">"),
            .svg),
        SniffCase(
            "svg after a doctype with an internal subset",
            ascii("<?xml version=\"1.0\"?><!DOCTYPE x [ <!ENTITY a \"<b>\"> ]><svg/>"), .svg),
        SniffCase("svg with a namespace prefix", ascii("<svg:svg xmlns:svg=\"http://www.w3.org/2000/svg\"/>"), .svg),
        SniffCase("SVG in capitals after white space", ascii("\n\t  <SVG>"), .svg),
        SniffCase("svg after a stylesheet instruction", ascii("<?xml-stylesheet href=\"a.css\"?><svg>"), .svg),
        SniffCase("svg cut after its name", ascii("<?xml version=\"1.0\"?><svg"), .svg),
        SniffCase("HTML doctype", ascii("<!DOCTYPE html>\n<html><body><script>alert(1)</script>"), .html),
        SniffCase("html doctype in lower case", ascii("<!doctype html><title>x</title>"), .html),
        SniffCase("html element", ascii("<html lang=\"en\">"), .html),
        SniffCase("HTML after a comment", ascii("<!-- saved from url -->\n<HTML>"), .html),
        SniffCase("head", ascii("<head><meta charset=utf-8>"), .html),
        SniffCase("script", ascii("<script>alert(document.cookie)</script>"), .html),
        SniffCase("iframe", ascii("  <iframe src=x>"), .html),
        SniffCase("paragraph", ascii("<p>hello</p>"), .html),
        SniffCase("bold", ascii("<b>x</b>"), .html),
        SniffCase("an unterminated comment", ascii("<!-- a long licence header that never ends"), .html),
        SniffCase("a comment, then text", ascii("<!-- note -->\nhello"), .html),
        SniffCase("a comment, then an unknown element", ascii("<!-- note --><note/>"), .html),
        SniffCase("svg after a comment", ascii("<!-- icon --><svg/>"), .svg),
        SniffCase("XHTML", ascii("<?xml version=\"1.0\"?>\n<html xmlns=\"http://www.w3.org/1999/xhtml\">"), .html),
        SniffCase("XML feed", ascii("<?xml version=\"1.0\"?>\n<rss version=\"2.0\"><channel>"), .xml),
        SniffCase("XML declaration alone", ascii("<?xml version=\"1.0\"?>"), .xml),
        SniffCase("XML declaration cut short", ascii("<?xml version=\"1.0\" encod"), .xml),
        SniffCase("XML with a doctype", ascii("<?xml version=\"1.0\"?><!DOCTYPE note SYSTEM \"note.dtd\"><note/>"), .xml),
    ]

    @Test(arguments: markupCases) func markupIsRecognisedAndIsNeverAnImage(sniff: SniffCase) throws {
        let format = MediaSniffer.sniff(sniff.bytes, isWholeFile: true)
        #expect(format == sniff.format)
        #expect(format.kind == .file)
        #expect(!format.isSafeToServeInline)
        let inspection = try MediaInspector.inspect(sniff.bytes, isWholeFile: true)
        #expect(inspection.image == nil)
        #expect(inspection.kind == .file)
    }

    static let textCases: [SniffCase] = [
        SniffCase("ASCII", ascii("hello, world\n"), .plainText),
        SniffCase("accents, CJK, emoji", ascii("héllo 日本語 😀\r\n"), .plainText),
        SniffCase("BOM", [0xEF, 0xBB, 0xBF] + ascii("text"), .plainText),
        SniffCase("CSV", ascii("a,b,c\n1,2,3\n"), .plainText),
        SniffCase("JSON", ascii("{\"svg\": \"<svg>\"}"), .plainText),
        SniffCase("angle bracket that is not a tag", ascii("<3 you\n"), .plainText),
        SniffCase("an element XML would need a declaration for", ascii("<note>hi</note>"), .plainText),
        SniffCase("'I'm free' is not a QuickTime atom", ascii("I'm free to go"), .plainText),
        SniffCase("a NUL byte", ascii("text\u{0}more"), .octetStream),
        SniffCase("a lone continuation byte", ascii("ab") + [0x80], .octetStream),
        SniffCase("an overlong slash", [0x2F, 0xC0, 0xAF], .octetStream),
        SniffCase("an overlong three-byte form", [0xE0, 0x80, 0xAF], .octetStream),
        SniffCase("a UTF-16 surrogate", [0x61, 0xED, 0xA0, 0x80], .octetStream),
        SniffCase("beyond U+10FFFF", [0xF4, 0x90, 0x80, 0x80], .octetStream),
        SniffCase("an F5 lead byte", [0xF5, 0x80, 0x80, 0x80], .octetStream),
        SniffCase("Latin-1", [0x63, 0x61, 0x66, 0xE9, 0x20, 0x6F, 0x6B], .octetStream),
        SniffCase("UTF-16 with BOM", [0xFF, 0xFE, 0x68, 0x00, 0x69, 0x00], .octetStream),
    ]

    @Test(arguments: textCases) func textIsValidUTF8WithoutNUL(sniff: SniffCase) {
        #expect(MediaSniffer.sniff(sniff.bytes, isWholeFile: true) == sniff.format)
    }

    @Test func aCharacterCutByThePrefixEndIsStillText() {
        let text = ascii("price: 5 €")  // € is E2 82 AC
        for cut in 1...2 {
            let prefix = Array(text.dropLast(cut))
            #expect(MediaSniffer.sniff(prefix, isWholeFile: false) == .plainText)
            #expect(MediaSniffer.sniff(prefix, isWholeFile: true) == .octetStream, "a whole file cannot end mid-character")
        }
        // A broken sequence is broken even in a prefix.
        #expect(MediaSniffer.sniff(ascii("ab") + [0xE2, 0x41], isWholeFile: false) == .octetStream)
        #expect(MediaSniffer.sniff(ascii("ab") + [0xF4, 0x90], isWholeFile: false) == .octetStream)
    }

    @Test func contentTypesAndKinds() {
        #expect(MediaFormat.png.contentType == "image/png")
        #expect(MediaFormat.jpeg.contentType == "image/jpeg")
        #expect(MediaFormat.gif.contentType == "image/gif")
        #expect(MediaFormat.webp.contentType == "image/webp")
        #expect(MediaFormat.plainText.contentType == "text/plain; charset=utf-8")
        #expect(MediaFormat.svg.contentType == "image/svg+xml")
        #expect(MediaFormat.html.contentType == "text/html")
        #expect(MediaFormat.mp4.kind == .video)
        #expect(MediaFormat.quickTime.kind == .video)
        #expect(MediaFormat.webm.kind == .video)
        #expect(MediaFormat.matroska.kind == .video)
        #expect(MediaFormat.mp3.kind == .file)
        #expect(MediaFormat.pdf.kind == .file)
        #expect(MediaFormat.octetStream.contentType == "application/octet-stream")
        for format in MediaFormat.allCases {
            // Images are exactly the formats measured from their headers, and the only ones served inline.
            #expect((format.kind == .image) == (format.imageFormat != nil), "\(format)")
            #expect(format.isSafeToServeInline == (format.imageFormat != nil), "\(format)")
            #expect(format.imageFormat?.mediaFormat ?? format == format)
        }
        #expect(MediaFormat.allCases.filter { $0.kind == .image } == [.png, .jpeg, .gif, .webp])
        #expect(MediaFormat.svg.kind == .file)
    }
}
