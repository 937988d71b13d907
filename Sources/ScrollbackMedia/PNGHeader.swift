/// PNG: the signature, then the IHDR chunk, which the format requires first,
/// holding the width and height as big-endian 32-bit integers.
enum PNGHeader {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    static func read(_ reader: HeaderReader) throws(ImageHeaderError) -> ImageDimensions {
        try reader.expectMagic([signature])
        let length = try reader.uint32BigEndian(at: 8)
        try reader.require(16)
        guard reader.view.matches("IHDR", at: 12) else {
            throw reader.malformed("the first chunk is \(try reader.fourCC(at: 12)), not IHDR")
        }
        guard length == 13 else {
            throw reader.malformed("the IHDR chunk is \(length) bytes long, not 13")
        }
        let width = try reader.uint32BigEndian(at: 16)
        let height = try reader.uint32BigEndian(at: 20)
        // PNG caps both at 2^31 - 1; the limits, far lower, catch a set top bit.
        return ImageDimensions(format: .png, encodedWidth: width, encodedHeight: height)
    }
}
