import ScrollbackMedia

// Minimal valid files, built byte by byte from the formats' specifications
// (not from the module's code), so a test fails if the module misreads them.

func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

func bigEndian16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
func bigEndian32(_ value: Int) -> [UInt8] { bigEndian16(value >> 16 & 0xFFFF) + bigEndian16(value & 0xFFFF) }
func littleEndian16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
func littleEndian24(_ value: Int) -> [UInt8] { littleEndian16(value & 0xFFFF) + [UInt8(value >> 16 & 0xFF)] }
func littleEndian32(_ value: Int) -> [UInt8] { littleEndian16(value & 0xFFFF) + littleEndian16(value >> 16 & 0xFFFF) }

/// The CRC-32 PNG chunks end with (ISO 3309), bit by bit.
func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
    }
    return ~crc
}

enum Build {
    // MARK: PNG

    static func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = ascii(type) + data
        return bigEndian32(data.count) + body + bigEndian32(Int(crc32(body)))
    }

    /// Signature, IHDR (8-bit RGB), an empty IDAT, IEND.
    static func png(width: Int, height: Int) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + pngChunk("IHDR", bigEndian32(width) + bigEndian32(height) + [8, 2, 0, 0, 0])
            + pngChunk("IDAT", [0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]) + pngChunk("IEND", [])
    }

    // MARK: GIF

    /// Header, logical screen (no colour table), one 1×1 image, trailer.
    static func gif(version: String = "89a", width: Int, height: Int) -> [UInt8] {
        ascii("GIF" + version) + littleEndian16(width) + littleEndian16(height) + [0x00, 0x00, 0x00]
            + [0x2C] + littleEndian16(0) + littleEndian16(0) + littleEndian16(1) + littleEndian16(1) + [0x00]
            + [0x02, 0x02, 0x44, 0x01, 0x00] + [0x3B]
    }

    // MARK: WebP

    static func riffWebP(_ chunks: [UInt8]) -> [UInt8] {
        ascii("RIFF") + littleEndian32(4 + chunks.count) + ascii("WEBP") + chunks
    }

    static func webpChunk(_ fourCC: String, _ data: [UInt8]) -> [UInt8] {
        ascii(fourCC) + littleEndian32(data.count) + data + (data.count % 2 == 1 ? [0] : [])
    }

    /// A VP8 key frame header: frame tag (key frame, version 0, shown,
    /// partition size), start code, 14-bit sizes with their scale bits set to
    /// check that they are masked off.
    static func webpLossy(width: Int, height: Int, scaleBits: Int = 0) -> [UInt8] {
        let firstPartitionSize = 16
        let frameTag = 0 | (0 << 1) | (1 << 4) | (firstPartitionSize << 5)
        let frame =
            littleEndian24(frameTag) + [0x9D, 0x01, 0x2A] + littleEndian16(width | scaleBits << 14)
            + littleEndian16(height | scaleBits << 14) + [UInt8](repeating: 0, count: 16)
        return riffWebP(webpChunk("VP8 ", frame))
    }

    /// VP8L: signature 0x2F, then width - 1 and height - 1 in 14 bits each,
    /// alpha, version 0, least significant bit first.
    static func webpLossless(width: Int, height: Int, alpha: Bool = true, version: Int = 0) -> [UInt8] {
        let bits = (width - 1) | (height - 1) << 14 | (alpha ? 1 : 0) << 28 | version << 29
        return riffWebP(webpChunk("VP8L", [0x2F] + littleEndian32(bits) + [0, 0, 0]))
    }

    /// VP8X with the alpha flag, canvas width - 1 and height - 1 in 24 bits,
    /// followed by a small lossless image as real files have.
    static func webpExtended(width: Int, height: Int) -> [UInt8] {
        let header = [0x10, 0, 0, 0] + littleEndian24(width - 1) + littleEndian24(height - 1)
        return riffWebP(
            webpChunk("VP8X", header)
                + webpChunk("VP8L", [0x2F] + littleEndian32(0) + [0, 0, 0]))
    }

    // MARK: JPEG

    static func jpegSegment(_ marker: UInt8, _ payload: [UInt8], fill: Int = 0) -> [UInt8] {
        [UInt8](repeating: 0xFF, count: fill) + [0xFF, marker] + bigEndian16(payload.count + 2) + payload
    }

    /// An APP1 EXIF payload: "Exif\0\0", a TIFF header in the given byte order,
    /// IFD0 with a Make entry before the orientation entry.
    static func exifPayload(orientation: Int, bigEndian: Bool, type: Int = 3, count: Int = 1) -> [UInt8] {
        let u16 = bigEndian ? bigEndian16 : littleEndian16
        let u32 = bigEndian ? bigEndian32 : littleEndian32
        let make = u16(0x010F) + u16(2) + u32(4) + ascii("Cam") + [0]
        // A SHORT is left-justified in the 4-byte value field.
        let value = type == 3 ? u16(orientation) + [0, 0] : u32(orientation)
        let orientationEntry = u16(0x0112) + u16(type) + u32(count) + value
        let tiff = ascii(bigEndian ? "MM" : "II") + u16(42) + u32(8) + u16(2) + make + orientationEntry + u32(0)
        return ascii("Exif") + [0, 0] + tiff
    }

    /// A whole baseline-shaped JPEG: SOI, APP0 JFIF, optional EXIF, DQT, the
    /// frame header with the chosen SOFn marker, DHT, SOS, a little entropy
    /// data with a stuffed byte and a restart marker, EOI.
    struct JPEG: Sendable, CustomStringConvertible {
        var width: Int
        var height: Int
        var sofMarker: UInt8 = 0xC0
        var orientation: Int? = nil
        var exifBigEndian = true
        /// FF fill bytes before every marker after SOI.
        var fill = 0
        /// Extra segments (marker, payload length) between APP0 and DQT.
        var extraSegments: [(marker: UInt8, length: Int)] = []

        var bytes: [UInt8] { built.bytes }

        /// The offset just past the frame header's width: the shortest prefix that has the size.
        var headerLength: Int { built.headerLength }

        private var built: (bytes: [UInt8], headerLength: Int) {
            var out: [UInt8] = [0xFF, 0xD8]
            out += Build.jpegSegment(0xE0, ascii("JFIF") + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0], fill: fill)
            if let orientation {
                out += Build.jpegSegment(
                    0xE1, Build.exifPayload(orientation: orientation, bigEndian: exifBigEndian), fill: fill)
            }
            for (marker, length) in extraSegments {
                // Payload bytes that look like markers and sizes, to catch a walk that reads inside.
                let payload = (0..<length).map { index in [0xFF, 0xC0, 0x00, 0x11][index % 4] as UInt8 }
                out += Build.jpegSegment(marker, payload, fill: fill)
            }
            out += Build.jpegSegment(0xDB, [0x00] + [UInt8](repeating: 1, count: 64), fill: fill)
            // Fill, FF, marker, length (2), precision, height (2), width (2).
            let headerLength = out.count + fill + 9
            out += Build.jpegSegment(
                sofMarker,
                [8] + bigEndian16(height) + bigEndian16(width) + [3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1],
                fill: fill)
            out += Build.jpegSegment(0xC4, [0x00] + [UInt8](repeating: 0, count: 15) + [0], fill: fill)
            out += Build.jpegSegment(0xDA, [3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 0x3F, 0], fill: fill)
            out += [0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD0, 0x56]
            out += [0xFF, 0xD9]
            return (out, headerLength)
        }

        var description: String {
            "JPEG(\(width)×\(height), SOF \(String(sofMarker, radix: 16)), orientation \(orientation.map(String.init) ?? "none"), "
                + "\(exifBigEndian ? "MM" : "II"), fill \(fill), extra \(extraSegments.map { "\(String($0.marker, radix: 16)):\($0.length)" }))"
        }
    }
}
