/// JPEG: the start-of-image marker FF D8, then marker segments (FF, a marker
/// byte, a big-endian length that counts itself, the payload) up to the frame
/// header (SOFn), which holds the height and width as big-endian 16-bit
/// integers. On the way, the first APP1 segment that holds EXIF gives the
/// orientation.
///
/// The walk follows libjpeg's reading of a marker: any number of FF fill bytes
/// may stand before a marker byte, and stray bytes between segments are
/// skipped until the next FF. Markers without a length (RSTn, TEM) are stepped
/// over. A scan (SOS) or the end of the image (EOI) before any frame header is
/// a broken file.
enum JPEGHeader {
    /// The frame headers that carry a size: SOF0-3, 5-7, 9-11, 13-15. C4 (DHT),
    /// C8 (JPG) and CC (DAC) share the range but are not frames.
    static let startOfFrameMarkers: Set<UInt8> = [
        0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF,
    ]

    static func read(_ reader: HeaderReader) throws(ImageHeaderError) -> ImageDimensions {
        var markersFrom = 2
        do throws(ImageHeaderError) {
            return try walk(reader, markersFrom: &markersFrom)
        } catch .truncated(let format, let needed, let available) {
            // The frame header is still ahead: at least FF, a marker, its length,
            // the precision, height and width (9 bytes) after where the walk
            // last looked for a marker.
            // Asking for that much at once spares a caller a step per byte.
            throw .truncated(format, needed: max(needed, markersFrom + 9), available: available)
        }
    }

    private static func walk(
        _ reader: HeaderReader, markersFrom: inout Int
    ) throws(ImageHeaderError) -> ImageDimensions {
        try reader.expectMagic([[0xFF, 0xD8]])
        var offset = 2
        var orientation = ExifOrientation.up
        var sawExif = false
        while true {
            markersFrom = offset
            // Skip stray bytes, then the fill bytes, up to the marker byte.
            while try reader.byte(at: offset) != 0xFF { offset += 1 }
            while try reader.byte(at: offset) == 0xFF { offset += 1 }
            let marker = try reader.byte(at: offset)
            offset += 1
            switch marker {
            case 0x00:
                // FF 00 is a stuffed byte of entropy-coded data: stray, skip on.
                continue
            case 0x01, 0xD0...0xD7:
                continue
            case 0xD8:
                throw reader.malformed("a second start-of-image marker comes before the frame header")
            case 0xD9:
                throw reader.malformed("the image ends before any frame header")
            case 0xDA:
                throw reader.malformed("a scan starts before any frame header")
            default:
                break
            }
            let length = try reader.uint16BigEndian(at: offset)
            guard length >= 2 else {
                throw reader.malformed("segment FF\(hex(marker)) has a length of \(length)")
            }
            if startOfFrameMarkers.contains(marker) {
                // Length, precision, height, width, component count.
                guard length >= 8 else {
                    throw reader.malformed("the frame header FF\(hex(marker)) is \(length) bytes, too short")
                }
                let height = try reader.uint16BigEndian(at: offset + 3)
                let width = try reader.uint16BigEndian(at: offset + 5)
                return ImageDimensions(
                    format: .jpeg, encodedWidth: width, encodedHeight: height, orientation: orientation)
            }
            let segmentEnd = offset + length
            // The first EXIF segment counts; XMP, also in APP1, is passed over.
            if marker == 0xE1, !sawExif, length >= 8, reader.view.matches(EXIF.identifier, at: offset + 2) {
                // Reading past the segment needs all of it anyway: ask for it whole.
                try reader.require(segmentEnd)
                sawExif = true
                orientation = EXIF.orientation(in: reader.view, from: offset + 2, to: segmentEnd) ?? .up
            }
            offset = segmentEnd
        }
    }
}

/// The orientation tag of an APP1 EXIF payload: "Exif\0\0", then a TIFF
/// header ("II" little-endian or "MM" big-endian, 42, the offset of IFD0),
/// then IFD0's 12-byte entries; tag 0x0112, type SHORT, count 1.
///
/// EXIF that does not parse gives no orientation rather than an error, as
/// browsers do: a photo with a broken maker note still shows.
enum EXIF {
    /// "Exif" and two NULs.
    static let identifier: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]

    static func orientation(in view: ByteView, from start: Int, to end: Int) -> ExifOrientation? {
        guard end - start >= 6, view.matches(identifier, at: start) else { return nil }
        let tiff = start + 6
        let bigEndian: Bool
        if view.matches("MM", at: tiff) {
            bigEndian = true
        } else if view.matches("II", at: tiff) {
            bigEndian = false
        } else {
            return nil
        }
        // Every read stays inside the segment: `inside` bounds them by `end`.
        func inside(_ offset: Int, _ length: Int) -> Bool { offset >= tiff && offset <= end - length }
        guard inside(tiff, 8), view.uint16(at: tiff + 2, bigEndian: bigEndian) == 42,
            let ifdOffset = view.uint32(at: tiff + 4, bigEndian: bigEndian)
        else { return nil }
        let ifd = tiff + ifdOffset
        guard inside(ifd, 2), let entryCount = view.uint16(at: ifd, bigEndian: bigEndian) else { return nil }
        for index in 0..<entryCount {
            let entry = ifd + 2 + 12 * index
            guard inside(entry, 12) else { return nil }
            guard view.uint16(at: entry, bigEndian: bigEndian) == 0x0112 else { continue }
            guard view.uint16(at: entry + 2, bigEndian: bigEndian) == 3,
                view.uint32(at: entry + 4, bigEndian: bigEndian) == 1,
                let value = view.uint16(at: entry + 8, bigEndian: bigEndian)
            else { return nil }
            return ExifOrientation(rawValue: value)
        }
        return nil
    }
}
