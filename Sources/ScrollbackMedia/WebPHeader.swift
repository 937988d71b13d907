/// WebP: a RIFF container ("RIFF", size, "WEBP") whose first chunk is one of
///
/// - `VP8 ` (lossy): a VP8 key frame; after its 3-byte frame tag, the start code
///   9D 01 2A and two little-endian 16-bit fields whose low 14 bits are the
///   width and height (the top 2 bits are an upscaling hint decoders ignore);
/// - `VP8L` (lossless): the signature byte 0x2F, then 14 bits of width - 1,
///   14 bits of height - 1, 1 bit of alpha and 3 bits of version (0), packed
///   least significant bit first;
/// - `VP8X` (extended: alpha, animation, metadata): flags, 3 reserved bytes,
///   then the canvas width - 1 and height - 1 as little-endian 24-bit integers.
///
/// An EXIF orientation inside a VP8X file is not applied.
enum WebPHeader {
    static func read(_ reader: HeaderReader) throws(ImageHeaderError) -> ImageDimensions {
        try reader.expectMagic([Array("RIFF".utf8)])
        try reader.expectMagic([Array("WEBP".utf8)], at: 8)
        try reader.require(16)
        let view = reader.view
        let chunkSize = try reader.uint32LittleEndian(at: 16)
        let (width, height): (Int, Int)
        if view.matches("VP8 ", at: 12) {
            (width, height) = try lossy(reader, chunkSize: chunkSize)
        } else if view.matches("VP8L", at: 12) {
            (width, height) = try lossless(reader, chunkSize: chunkSize)
        } else if view.matches("VP8X", at: 12) {
            (width, height) = try extended(reader, chunkSize: chunkSize)
        } else {
            throw reader.malformed("the first chunk is \(try reader.fourCC(at: 12)), not VP8, VP8L or VP8X")
        }
        return ImageDimensions(format: .webp, encodedWidth: width, encodedHeight: height)
    }

    private static func lossy(_ reader: HeaderReader, chunkSize: Int) throws(ImageHeaderError) -> (Int, Int) {
        guard chunkSize >= 10 else { throw reader.malformed("the VP8 chunk is \(chunkSize) bytes, too short for a frame header") }
        let frameTag = try reader.uint24LittleEndian(at: 20)
        // Bit 0 is 0 for a key frame; only a key frame carries the size.
        guard frameTag & 1 == 0 else { throw reader.malformed("the VP8 frame is not a key frame") }
        guard (frameTag >> 1) & 7 <= 3 else { throw reader.malformed("the VP8 frame has an unknown version") }
        try reader.require(26)
        guard reader.view.matches([0x9D, 0x01, 0x2A], at: 23) else {
            throw reader.malformed("the VP8 key frame lacks its start code")
        }
        let width = try reader.uint16LittleEndian(at: 26) & 0x3FFF
        let height = try reader.uint16LittleEndian(at: 28) & 0x3FFF
        return (width, height)
    }

    private static func lossless(_ reader: HeaderReader, chunkSize: Int) throws(ImageHeaderError) -> (Int, Int) {
        guard chunkSize >= 5 else { throw reader.malformed("the VP8L chunk is \(chunkSize) bytes, too short for a header") }
        guard try reader.byte(at: 20) == 0x2F else { throw reader.malformed("the VP8L signature byte is not 0x2F") }
        let bits = try reader.uint32LittleEndian(at: 21)
        guard bits >> 29 == 0 else { throw reader.malformed("the VP8L version is not 0") }
        return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    }

    private static func extended(_ reader: HeaderReader, chunkSize: Int) throws(ImageHeaderError) -> (Int, Int) {
        guard chunkSize >= 10 else { throw reader.malformed("the VP8X chunk is \(chunkSize) bytes, not 10") }
        let width = try reader.uint24LittleEndian(at: 24) + 1
        let height = try reader.uint24LittleEndian(at: 27) + 1
        return (width, height)
    }
}
