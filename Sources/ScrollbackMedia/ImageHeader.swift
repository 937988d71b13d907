/// The EXIF orientation of a JPEG (tag 0x0112 of IFD0): how the stored pixels
/// must be turned to be shown upright. The raw values are EXIF's 1...8.
public enum ExifOrientation: Int, Sendable, Hashable, CaseIterable {
    /// 1: stored upright.
    case up = 1
    /// 2: mirrored left to right.
    case upMirrored = 2
    /// 3: turned 180°.
    case down = 3
    /// 4: mirrored top to bottom.
    case downMirrored = 4
    /// 5: mirrored along the top-left to bottom-right diagonal (transposed).
    case leftMirrored = 5
    /// 6: shown after turning 90° clockwise (a phone held upright).
    case right = 6
    /// 7: mirrored along the other diagonal (transversed).
    case rightMirrored = 7
    /// 8: shown after turning 90° counter-clockwise.
    case left = 8

    /// Orientations 5 to 8 turn the image a quarter: the shown width is the stored height.
    public var swapsWidthAndHeight: Bool { rawValue >= 5 }
}

/// The largest images the server accepts. Headers claiming more are refused
/// before anything tries to decode them.
public struct ImageLimits: Sendable, Hashable {
    /// The most pixels along either side.
    public var maxSide: Int
    /// The most pixels in all (width × height).
    public var maxPixels: Int

    public init(maxSide: Int, maxPixels: Int) {
        self.maxSide = maxSide
        self.maxPixels = maxPixels
    }

    /// 65,535 pixels a side (JPEG's and GIF's own ceiling) and 2^28 pixels in all
    /// (about 16,384 × 16,384, a gigabyte of RGBA).
    public static let standard = ImageLimits(maxSide: 65_535, maxPixels: 1 << 28)
}

/// An image's pixel size from its header.
public struct ImageDimensions: Sendable, Hashable, CustomStringConvertible {
    public let format: ImageFormat
    /// The size as stored in the file, before any orientation.
    public let encodedWidth: Int
    public let encodedHeight: Int
    /// The EXIF orientation (JPEG only; `.up` for the others and when absent or unreadable).
    public let orientation: ExifOrientation

    public init(format: ImageFormat, encodedWidth: Int, encodedHeight: Int, orientation: ExifOrientation = .up) {
        self.format = format
        self.encodedWidth = encodedWidth
        self.encodedHeight = encodedHeight
        self.orientation = orientation
    }

    /// The width as displayed, after the orientation: what a layout should use.
    public var width: Int { orientation.swapsWidthAndHeight ? encodedHeight : encodedWidth }
    /// The height as displayed, after the orientation.
    public var height: Int { orientation.swapsWidthAndHeight ? encodedWidth : encodedHeight }

    public var description: String {
        "\(format.displayName) \(width)×\(height)" + (orientation == .up ? "" : " (orientation \(orientation.rawValue))")
    }
}

/// Why an image header gave no size. ``reason`` is a sentence fit for a 4xx body.
public enum ImageHeaderError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bytes end before the header does. `needed` is a lower bound on how many
    /// bytes from the start the header takes: when only a prefix of a longer file
    /// was passed, pass at least that many and ask again.
    case truncated(ImageFormat, needed: Int, available: Int)
    /// The bytes do not start with the format's signature.
    case badMagic(ImageFormat)
    /// The signature is there but the header is not what the format says it must be.
    case malformed(ImageFormat, detail: String)
    /// The header gives a width or height of zero.
    case zeroSize(ImageFormat, width: Int, height: Int)
    /// The header gives a size beyond the limits.
    case tooLarge(ImageFormat, width: Int, height: Int, limits: ImageLimits)

    public var format: ImageFormat {
        switch self {
        case .truncated(let format, _, _), .badMagic(let format), .malformed(let format, _),
            .zeroSize(let format, _, _), .tooLarge(let format, _, _, _):
            format
        }
    }

    /// What is wrong, in words a client can show.
    public var reason: String {
        let name = format.displayName
        switch self {
        case .truncated(_, let needed, let available):
            return "the \(name) header is cut short: it takes at least \(needed) bytes and only \(available) are there"
        case .badMagic:
            return "the bytes do not start with a \(name) signature"
        case .malformed(_, let detail):
            return "broken \(name) header: \(detail)"
        case .zeroSize(_, let width, let height):
            return "the \(name) header gives a size of \(width)×\(height) pixels"
        case .tooLarge(_, let width, let height, let limits):
            return "the \(name) image is \(width)×\(height) pixels, beyond the limit of \(limits.maxSide) pixels a side "
                + "and \(limits.maxPixels) pixels in all"
        }
    }

    public var description: String { reason }
}

/// Reads the pixel size of PNG, JPEG, GIF and WebP images from their headers,
/// without decoding a pixel.
public enum ImageHeader {
    /// The size of an image of a known format (from ``MediaSniffer/sniff(_:isWholeFile:)``)
    /// from its first bytes: the whole file, or a prefix of it (64 KiB is enough for
    /// nearly every file; a JPEG with large metadata segments may ask for more through
    /// ``ImageHeaderError/truncated(_:needed:available:)``).
    ///
    /// For JPEG the EXIF orientation is applied: ``ImageDimensions/width`` and
    /// ``ImageDimensions/height`` are the size as displayed.
    public static func dimensions(
        of format: ImageFormat, in bytes: some Collection<UInt8>, limits: ImageLimits = .standard
    ) throws(ImageHeaderError) -> ImageDimensions {
        try dimensions(of: format, in: ByteView(bytes), limits: limits)
    }

    static func dimensions(
        of format: ImageFormat, in view: ByteView, limits: ImageLimits
    ) throws(ImageHeaderError) -> ImageDimensions {
        let reader = HeaderReader(format: format, view: view)
        let dimensions: ImageDimensions
        do throws(ImageHeaderError) {
            switch format {
            case .png: dimensions = try PNGHeader.read(reader)
            case .gif: dimensions = try GIFHeader.read(reader)
            case .webp: dimensions = try WebPHeader.read(reader)
            case .jpeg: dimensions = try JPEGHeader.read(reader)
            }
        } catch .truncated(let format, let needed, let available) {
            throw .truncated(format, needed: max(needed, format.shortestHeader), available: available)
        }
        try check(dimensions, against: limits)
        return dimensions
    }

    static func check(_ dimensions: ImageDimensions, against limits: ImageLimits) throws(ImageHeaderError) {
        let (width, height) = (dimensions.encodedWidth, dimensions.encodedHeight)
        guard width > 0, height > 0 else {
            throw .zeroSize(dimensions.format, width: width, height: height)
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard width <= limits.maxSide, height <= limits.maxSide, !overflow, pixels <= limits.maxPixels else {
            throw .tooLarge(dimensions.format, width: width, height: height, limits: limits)
        }
    }
}

/// A ``ByteView`` whose reads throw the right ``ImageHeaderError`` for one format.
struct HeaderReader {
    let format: ImageFormat
    let view: ByteView

    var count: Int { view.count }

    func truncated(needing needed: Int) -> ImageHeaderError {
        .truncated(format, needed: needed, available: view.count)
    }

    func malformed(_ detail: String) -> ImageHeaderError {
        .malformed(format, detail: detail)
    }

    /// Throws unless the bytes `..< end` are there.
    func require(_ end: Int) throws(ImageHeaderError) {
        guard view.count >= end else { throw truncated(needing: end) }
    }

    /// Checks a signature that may be cut short: bytes that differ are a bad
    /// magic, bytes that end early are a truncation.
    func expectMagic(_ alternatives: [[UInt8]], at offset: Int = 0) throws(ImageHeaderError) {
        var anyPrefixMatches = false
        for pattern in alternatives {
            let available = max(0, min(pattern.count, view.count - offset))
            let agrees = (0..<available).allSatisfy { view.bytes[offset + $0] == pattern[$0] }
            if agrees && available == pattern.count { return }
            anyPrefixMatches = anyPrefixMatches || agrees
        }
        if anyPrefixMatches { throw truncated(needing: offset + alternatives.map(\.count).min()!) }
        throw .badMagic(format)
    }

    func byte(at offset: Int) throws(ImageHeaderError) -> UInt8 {
        UInt8(try present(view.byte(at: offset).map(Int.init), end: offset + 1))
    }

    func uint16BigEndian(at offset: Int) throws(ImageHeaderError) -> Int {
        try present(view.uint16BigEndian(at: offset), end: offset + 2)
    }

    func uint16LittleEndian(at offset: Int) throws(ImageHeaderError) -> Int {
        try present(view.uint16LittleEndian(at: offset), end: offset + 2)
    }

    func uint24LittleEndian(at offset: Int) throws(ImageHeaderError) -> Int {
        try present(view.uint24LittleEndian(at: offset), end: offset + 3)
    }

    func uint32BigEndian(at offset: Int) throws(ImageHeaderError) -> Int {
        try present(view.uint32BigEndian(at: offset), end: offset + 4)
    }

    func uint32LittleEndian(at offset: Int) throws(ImageHeaderError) -> Int {
        try present(view.uint32LittleEndian(at: offset), end: offset + 4)
    }

    /// A value read from the view, or the truncation that kept it from being read.
    private func present(_ value: Int?, end: Int) throws(ImageHeaderError) -> Int {
        guard let value else { throw truncated(needing: end) }
        return value
    }

    /// Four bytes as a chunk name: the ASCII text when printable, hex otherwise.
    func fourCC(at offset: Int) throws(ImageHeaderError) -> String {
        try require(offset + 4)
        let code = view.bytes[offset..<offset + 4]
        if code.allSatisfy({ (0x20...0x7E).contains($0) }) {
            return "'" + String(decoding: code, as: UTF8.self) + "'"
        }
        return "0x" + code.map { hex($0) }.joined()
    }
}

func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF".utf8)
    return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
}
