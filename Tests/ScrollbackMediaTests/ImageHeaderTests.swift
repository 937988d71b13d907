import ScrollbackMedia
import Testing

/// Reads the size of a built or real image, failing the test on an error.
func size(_ format: ImageFormat, _ bytes: [UInt8], limits: ImageLimits = .standard) throws -> ImageDimensions {
    try ImageHeader.dimensions(of: format, in: bytes, limits: limits)
}

/// The error reading `bytes` throws, or nil when it succeeds.
func headerError(_ format: ImageFormat, _ bytes: [UInt8], limits: ImageLimits = .standard) -> ImageHeaderError? {
    do {
        _ = try ImageHeader.dimensions(of: format, in: bytes, limits: limits)
        return nil
    } catch {
        return error
    }
}

@Suite struct ImageSizeTests {
    static let sizes = [(1, 1), (7, 5), (5, 7), (640, 480), (4032, 3024), (65_535, 1), (1, 65_535)]

    @Test(arguments: sizes) func pngSizeComesFromIHDR(width: Int, height: Int) throws {
        let dimensions = try size(.png, Build.png(width: width, height: height))
        #expect(dimensions == ImageDimensions(format: .png, encodedWidth: width, encodedHeight: height))
        #expect((dimensions.width, dimensions.height) == (width, height))
    }

    @Test(arguments: ["87a", "89a"], sizes) func gifSizeComesFromTheLogicalScreen(version: String, size dimensions: (Int, Int)) throws {
        let (width, height) = dimensions
        let read = try size(.gif, Build.gif(version: version, width: width, height: height))
        #expect((read.width, read.height) == (width, height))
    }

    @Test(arguments: [(1, 1), (7, 5), (5, 7), (640, 480), (16_383, 16_383)], [0, 1, 2, 3])
    func lossyWebPSizeIgnoresTheScaleBits(size dimensions: (Int, Int), scaleBits: Int) throws {
        let (width, height) = dimensions
        let read = try size(.webp, Build.webpLossy(width: width, height: height, scaleBits: scaleBits))
        #expect((read.width, read.height) == (width, height))
    }

    @Test(arguments: [(1, 1), (7, 5), (5, 7), (640, 480), (16_384, 16_384), (16_384, 1)])
    func losslessWebPSizeIsBitPacked(width: Int, height: Int) throws {
        let read = try size(.webp, Build.webpLossless(width: width, height: height))
        #expect((read.width, read.height) == (width, height))
        let opaque = try size(.webp, Build.webpLossless(width: width, height: height, alpha: false))
        #expect(opaque == read)
    }

    @Test(arguments: [(1, 1), (7, 5), (5, 7), (640, 480), (16_383, 16_384), (65_535, 4096)])
    func extendedWebPSizeIsTheCanvas(width: Int, height: Int) throws {
        let read = try size(.webp, Build.webpExtended(width: width, height: height))
        #expect((read.width, read.height) == (width, height))
    }

    static let frameMarkers: [UInt8] = [0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF]

    @Test(arguments: frameMarkers) func jpegSizeComesFromEveryKindOfFrameHeader(marker: UInt8) throws {
        let jpeg = Build.JPEG(width: 640, height: 480, sofMarker: marker)
        let read = try size(.jpeg, jpeg.bytes)
        #expect(read == ImageDimensions(format: .jpeg, encodedWidth: 640, encodedHeight: 480))
    }

    @Test func progressiveJPEGIsMeasured() throws {
        let read = try size(.jpeg, Build.JPEG(width: 1200, height: 800, sofMarker: 0xC2).bytes)
        #expect((read.width, read.height) == (1200, 800))
    }

    @Test(arguments: [UInt8(0xC4), 0xC8, 0xCC]) func tablesThatShareTheFrameRangeAreNotFrames(marker: UInt8) throws {
        // A DHT, JPG or DAC segment whose bytes would read as a 4352×4352 frame comes first.
        let jpeg = Build.JPEG(width: 300, height: 200, extraSegments: [(marker, 12)])
        let read = try size(.jpeg, jpeg.bytes)
        #expect((read.width, read.height) == (300, 200))
    }

    @Test(arguments: [1, 2, 7]) func jpegFillBytesBeforeMarkersAreSkipped(fill: Int) throws {
        let jpeg = Build.JPEG(width: 321, height: 123, orientation: 6, fill: fill)
        let read = try size(.jpeg, jpeg.bytes)
        #expect(read == ImageDimensions(format: .jpeg, encodedWidth: 321, encodedHeight: 123, orientation: .right))
    }

    @Test func aLargestAPPSegmentIsSkippedWhole() throws {
        // 65,533 bytes of payload full of FF C0 00 11, the most one segment holds.
        let jpeg = Build.JPEG(width: 800, height: 600, orientation: 8, extraSegments: [(0xE2, 65_533), (0xED, 40_000)])
        let read = try size(.jpeg, jpeg.bytes)
        #expect(read == ImageDimensions(format: .jpeg, encodedWidth: 800, encodedHeight: 600, orientation: .left))
        #expect(jpeg.headerLength > 65_536 + 40_000)
    }

    @Test func aFrameHeaderBeyondAPrefixAsksForMoreAndIsFoundWithIt() throws {
        // The server passes 64 KiB; big metadata can push the frame header past it.
        let jpeg = Build.JPEG(width: 4032, height: 3024, orientation: 6, extraSegments: [(0xE2, 65_533), (0xE2, 30_000)])
        let bytes = jpeg.bytes
        let prefix = Array(bytes.prefix(65_536))
        guard case .truncated(.jpeg, let needed, let available) = headerError(.jpeg, prefix) else {
            Issue.record("a 64 KiB prefix should be truncated")
            return
        }
        #expect(available == 65_536)
        #expect(needed > 65_536 && needed <= jpeg.headerLength)
        var length = needed
        var result: ImageDimensions?
        // Following `needed` reaches the frame header in a step or two per segment.
        for _ in 0..<4 where result == nil {
            do throws(ImageHeaderError) {
                result = try ImageHeader.dimensions(of: .jpeg, in: bytes.prefix(length))
            } catch .truncated(_, let more, _) {
                #expect(more > length)
                length = more
            }
        }
        #expect(result?.width == 3024)
        #expect(result?.height == 4032)
    }

    @Test func strayBytesBetweenSegmentsAreSkippedAsLibjpegDoes() throws {
        var bytes = Build.JPEG(width: 90, height: 60).bytes
        // After APP0 (2 + 18 bytes): garbage, a stuffed FF 00, a restart marker, a TEM.
        bytes.insert(contentsOf: [0x00, 0x12, 0xFF, 0x00, 0x34, 0xFF, 0xD3, 0xFF, 0x01], at: 20)
        let read = try size(.jpeg, bytes)
        #expect((read.width, read.height) == (90, 60))
    }
}

@Suite struct ExifOrientationTests {
    @Test(arguments: 1...8, [true, false]) func everyOrientationInBothByteOrders(orientation: Int, bigEndian: Bool) throws {
        let jpeg = Build.JPEG(width: 640, height: 480, orientation: orientation, exifBigEndian: bigEndian)
        let read = try size(.jpeg, jpeg.bytes)
        #expect(read.orientation.rawValue == orientation)
        #expect((read.encodedWidth, read.encodedHeight) == (640, 480))
        if orientation >= 5 {
            #expect((read.width, read.height) == (480, 640), "orientations 5-8 turn a quarter")
        } else {
            #expect((read.width, read.height) == (640, 480))
        }
    }

    @Test func aPhoneHeldUprightIsTallerThanWide() throws {
        // What a phone writes: landscape pixels, orientation 6. Ignoring it would lay out a wide box.
        let read = try size(.jpeg, Build.JPEG(width: 4032, height: 3024, orientation: 6).bytes)
        #expect(read.width == 3024)
        #expect(read.height == 4032)
        #expect(read.height > read.width)
    }

    @Test(arguments: [0, 9, 255, 0xFFFF]) func anOrientationOutOfRangeMeansUpright(value: Int) throws {
        let read = try size(.jpeg, Build.JPEG(width: 64, height: 32, orientation: value).bytes)
        #expect(read.orientation == .up)
        #expect((read.width, read.height) == (64, 32))
    }

    @Test func anOrientationOfTheWrongTypeOrCountIsIgnored() throws {
        for (type, count) in [(4, 1), (3, 2)] {
            let exif = Build.exifPayload(orientation: 6, bigEndian: true, type: type, count: count)
            let bytes = [0xFF, 0xD8] + Build.jpegSegment(0xE1, exif) + Array(Build.JPEG(width: 64, height: 32).bytes.dropFirst(2))
            #expect(try size(.jpeg, bytes).orientation == .up)
        }
    }

    @Test func exifAfterAnXMPSegmentStillCounts() throws {
        let xmp = Build.jpegSegment(0xE1, ascii("http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>"))
        let exif = Build.jpegSegment(0xE1, Build.exifPayload(orientation: 5, bigEndian: false))
        let bytes = [0xFF, 0xD8] + xmp + exif + Array(Build.JPEG(width: 64, height: 32).bytes.dropFirst(2))
        let read = try size(.jpeg, bytes)
        #expect(read.orientation == .leftMirrored)
        #expect((read.width, read.height) == (32, 64))
    }

    @Test func onlyTheFirstEXIFSegmentCounts() throws {
        let first = Build.jpegSegment(0xE1, Build.exifPayload(orientation: 3, bigEndian: true))
        let second = Build.jpegSegment(0xE1, Build.exifPayload(orientation: 6, bigEndian: true))
        let bytes = [0xFF, 0xD8] + first + second + Array(Build.JPEG(width: 64, height: 32).bytes.dropFirst(2))
        #expect(try size(.jpeg, bytes).orientation == .down)
    }

    @Test func brokenEXIFLeavesTheImageUpright() throws {
        let good = Build.exifPayload(orientation: 6, bigEndian: true)
        var badByteOrder = good
        badByteOrder[6] = 0x58  // "XM"
        var badMagic = good
        badMagic[9] = 43
        var ifdOutside = good
        ifdOutside[13] = 0xF0  // IFD0 offset 240, past the segment
        var tooManyEntries = good
        tooManyEntries[14...15] = [0x7F, 0xFF]  // more entries than the segment holds
        let cutShort = Array(good.prefix(20))
        for payload in [badByteOrder, badMagic, ifdOutside, cutShort] {
            let bytes = [0xFF, 0xD8] + Build.jpegSegment(0xE1, payload)
                + Array(Build.JPEG(width: 64, height: 32).bytes.dropFirst(2))
            let read = try size(.jpeg, bytes)
            #expect(read.orientation == .up)
            #expect((read.width, read.height) == (64, 32))
        }
        // Entries read in order: the orientation (second) is still found among 32767 claimed.
        let bytes = [0xFF, 0xD8] + Build.jpegSegment(0xE1, tooManyEntries)
            + Array(Build.JPEG(width: 64, height: 32).bytes.dropFirst(2))
        #expect(try size(.jpeg, bytes).orientation == .right)
    }

    @Test func orientationSwapsExactlyForFiveToEight() {
        #expect(ExifOrientation.allCases.filter(\.swapsWidthAndHeight).map(\.rawValue) == [5, 6, 7, 8])
    }
}

@Suite struct BrokenHeaderTests {
    @Test func zeroSidesAreRefused() {
        #expect(headerError(.png, Build.png(width: 0, height: 5)) == .zeroSize(.png, width: 0, height: 5))
        #expect(headerError(.gif, Build.gif(width: 5, height: 0)) == .zeroSize(.gif, width: 5, height: 0))
        #expect(headerError(.jpeg, Build.JPEG(width: 5, height: 0).bytes) == .zeroSize(.jpeg, width: 5, height: 0))
        #expect(headerError(.webp, Build.webpLossy(width: 0, height: 0)) == .zeroSize(.webp, width: 0, height: 0))
    }

    @Test func sizesBeyondTheLimitsAreRefused() {
        let limits = ImageLimits.standard
        #expect(headerError(.png, Build.png(width: 65_536, height: 1)) == .tooLarge(.png, width: 65_536, height: 1, limits: limits))
        // Each side fits, the product (400 million pixels) does not.
        #expect(headerError(.png, Build.png(width: 20_000, height: 20_000)) == .tooLarge(.png, width: 20_000, height: 20_000, limits: limits))
        #expect(headerError(.webp, Build.webpExtended(width: 1 << 24, height: 1 << 24)) != nil)
        #expect(headerError(.png, Build.png(width: 0xFFFF_FFFF, height: 0xFFFF_FFFF)) != nil)
        // Exactly at the limit passes.
        #expect(headerError(.png, Build.png(width: 16_384, height: 16_384)) == nil)
        #expect(headerError(.png, Build.png(width: 16_384, height: 16_385)) != nil)
    }

    @Test func limitsWithoutCeilingsDoNotOverflow() throws {
        let unlimited = ImageLimits(maxSide: .max, maxPixels: .max)
        let read = try size(.png, Build.png(width: 0xFFFF_FFFF, height: 0x7FFF_FFFF), limits: unlimited)
        #expect(read.width == 0xFFFF_FFFF)
        // Even without ceilings, a product past Int.max is refused rather than trapping.
        #expect(
            headerError(.png, Build.png(width: 0xFFFF_FFFF, height: 0xFFFF_FFFF), limits: unlimited)
                == .tooLarge(.png, width: 0xFFFF_FFFF, height: 0xFFFF_FFFF, limits: unlimited))
        let tight = ImageLimits(maxSide: 100, maxPixels: 5_000)
        #expect(headerError(.gif, Build.gif(width: 100, height: 50), limits: tight) == nil)
        #expect(headerError(.gif, Build.gif(width: 100, height: 51), limits: tight) != nil)
    }

    @Test func theWrongSignatureIsABadMagic() {
        let png = Build.png(width: 1, height: 1)
        let jpeg = Build.JPEG(width: 1, height: 1).bytes
        #expect(headerError(.png, jpeg) == .badMagic(.png))
        #expect(headerError(.jpeg, png) == .badMagic(.jpeg))
        #expect(headerError(.gif, ascii("GIF88a") + [UInt8](repeating: 1, count: 10)) == .badMagic(.gif))
        #expect(headerError(.webp, ascii("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ")) == .badMagic(.webp))
        #expect(headerError(.webp, ascii("RIFX")) == .badMagic(.webp))
    }

    @Test func malformedHeadersSayWhatIsWrong() {
        var notIHDR = Build.png(width: 1, height: 1)
        notIHDR[12...15] = ArraySlice(ascii("CgBI"))
        var shortIHDR = Build.png(width: 1, height: 1)
        shortIHDR[11] = 12
        var notKeyFrame = Build.webpLossy(width: 5, height: 5)
        notKeyFrame[20] |= 1
        var noStartCode = Build.webpLossy(width: 5, height: 5)
        noStartCode[24] = 0x02
        var badSignature = Build.webpLossless(width: 5, height: 5)
        badSignature[20] = 0x2E
        let cases: [(ImageFormat, [UInt8], String)] = [
            (.png, notIHDR, "the first chunk is 'CgBI', not IHDR"),
            (.png, shortIHDR, "the IHDR chunk is 12 bytes long, not 13"),
            (.webp, notKeyFrame, "the VP8 frame is not a key frame"),
            (.webp, noStartCode, "the VP8 key frame lacks its start code"),
            (.webp, badSignature, "the VP8L signature byte is not 0x2F"),
            (.webp, Build.webpLossless(width: 5, height: 5, version: 1), "the VP8L version is not 0"),
            (.webp, Build.riffWebP(Build.webpChunk("VP8Z", [0, 0, 0, 0])), "the first chunk is 'VP8Z', not VP8, VP8L or VP8X"),
            (.webp, Build.riffWebP(Build.webpChunk("VP8X", [0, 0, 0, 0])), "the VP8X chunk is 4 bytes, not 10"),
            (.jpeg, [0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x08], "a scan starts before any frame header"),
            (.jpeg, [0xFF, 0xD8, 0xFF, 0xD9], "the image ends before any frame header"),
            (.jpeg, [0xFF, 0xD8, 0xFF, 0xD8], "a second start-of-image marker comes before the frame header"),
            (.jpeg, [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01], "segment FFE0 has a length of 1"),
            (.jpeg, [0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x07, 8, 0, 1, 0, 1], "the frame header FFC0 is 7 bytes, too short"),
        ]
        for (format, bytes, detail) in cases {
            let error = headerError(format, bytes)
            #expect(error == .malformed(format, detail: detail))
            #expect(error?.reason == "broken \(format.displayName) header: \(detail)")
        }
    }

    @Test func reasonsAreSentencesAClientCanShow() {
        #expect(
            ImageHeaderError.truncated(.png, needed: 24, available: 10).reason
                == "the PNG header is cut short: it takes at least 24 bytes and only 10 are there")
        #expect(ImageHeaderError.badMagic(.webp).reason == "the bytes do not start with a WebP signature")
        #expect(ImageHeaderError.zeroSize(.gif, width: 0, height: 3).reason == "the GIF header gives a size of 0×3 pixels")
        #expect(
            ImageHeaderError.tooLarge(.jpeg, width: 70_000, height: 2, limits: .standard).reason
                == "the JPEG image is 70000×2 pixels, beyond the limit of 65535 pixels a side and 268435456 pixels in all")
    }
}
