/// GIF: "GIF87a" or "GIF89a", then the logical screen descriptor, whose width
/// and height (little-endian 16-bit) are the size the image is shown at.
///
/// Decoders differ on a first frame larger than the logical screen (some grow
/// the image to fit it); the logical screen is what the format defines.
enum GIFHeader {
    static let signatures: [[UInt8]] = [Array("GIF87a".utf8), Array("GIF89a".utf8)]

    static func read(_ reader: HeaderReader) throws(ImageHeaderError) -> ImageDimensions {
        try reader.expectMagic(signatures)
        let width = try reader.uint16LittleEndian(at: 6)
        let height = try reader.uint16LittleEndian(at: 8)
        return ImageDimensions(format: .gif, encodedWidth: width, encodedHeight: height)
    }
}
