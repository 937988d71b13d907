import PropertyBased
import ScrollbackMedia
import Testing

/// Everything the module offers, called on `bytes`: it must come back with a
/// result or a typed error, and a size only within the limits.
func exerciseEverything(_ bytes: [UInt8]) {
    for isWholeFile in [true, false] {
        let format = MediaSniffer.sniff(bytes, isWholeFile: isWholeFile)
        do throws(ImageHeaderError) {
            let inspection = try MediaInspector.inspect(bytes, isWholeFile: isWholeFile)
            #expect(inspection.format == format)
            #expect((inspection.image != nil) == (format.kind == .image))
        } catch {
            #expect(format.kind == .image, "only images throw")
        }
    }
    for imageFormat in ImageFormat.allCases {
        if let read = try? ImageHeader.dimensions(of: imageFormat, in: bytes) {
            #expect(read.width > 0 && read.height > 0)
            #expect(read.width <= 65_535 && read.height <= 65_535 && read.width * read.height <= 1 << 28)
        }
    }
}

/// The image signatures, so that random tails reach past the first check.
let signatures: [[UInt8]] = [
    [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D] + ascii("IHDR"),
    [0xFF, 0xD8, 0xFF],
    [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x40] + ascii("Exif") + [0, 0] + ascii("MM") + [0, 42],
    [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x40] + ascii("Exif") + [0, 0] + ascii("II") + [42, 0],
    ascii("GIF87a"), ascii("GIF89a"),
    ascii("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 "), ascii("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8L"),
    ascii("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8X"),
    [0x00, 0x00, 0x00, 0x18] + ascii("ftyp"), [0x1A, 0x45, 0xDF, 0xA3], ascii("OggS\u{0}"), ascii("ID3"),
    [0xFF, 0xFB], ascii("<?xml"), ascii("<!DOCTYPE "), ascii("<svg"), ascii("<!--"), [0xEF, 0xBB, 0xBF],
]

@Suite struct MediaPropertyTests {
    @Test func randomBytesNeverCrashAnything() async {
        await propertyCheck(count: 2_000, input: Gen.uint8().array(of: 0...96)) { bytes in
            exerciseEverything(bytes)
        }
    }

    @Test func aSignatureWithRandomBytesBehindNeverCrashesAnything() async {
        await propertyCheck(count: 3_000, input: Gen.int(in: 0...(signatures.count - 1)), Gen.uint8().array(of: 0...120)) {
            index, tail in
            exerciseEverything(signatures[index] + tail)
        }
    }

    @Test func damagedRealImagesNeverCrashAnything() async {
        let samples = Samples.all
        let damage = zip(Gen.int(in: 0...10_000), Gen.uint8()).array(of: 1...8)
        await propertyCheck(count: 2_000, input: Gen.int(in: 0...(samples.count - 1)), damage, Gen.int(in: 0...2_000)) {
            index, changes, cut in
            var bytes = samples[index].bytes
            for (position, value) in changes { bytes[position % bytes.count] = value }
            exerciseEverything(Array(bytes.prefix(cut)))
        }
    }

    /// JPEGs of any shape the builder can make: their size is always read
    /// exactly, with the orientation applied, and any cut before the frame
    /// header asks for more bytes than it has.
    @Test func generatedJPEGsAreAlwaysReadExactly() async {
        let segmentMarkers: [UInt8] = [0xE0, 0xE2, 0xE3, 0xEC, 0xED, 0xEE, 0xFE, 0xDB, 0xC4, 0xDD, 0xCC]
        let segments = zip(Gen.element(of: segmentMarkers), Gen.int(in: 0...3_000)).array(of: 0...4)
        let jpegs = zip(
            Gen.int(in: 1...65_535), Gen.int(in: 1...65_535), Gen.element(of: ImageSizeTests.frameMarkers),
            Gen.int(in: 0...8), Gen.bool, Gen.int(in: 0...3), segments, Gen.int(in: 0...100_000)
        )
        await propertyCheck(count: 400, input: jpegs) { width, height, sof, orientation, bigEndian, fill, extra, cutSeed in
            let jpeg = Build.JPEG(
                width: width, height: height, sofMarker: sof!, orientation: orientation == 0 ? nil : orientation,
                exifBigEndian: bigEndian, fill: fill, extraSegments: extra.map { ($0.0!, $0.1) })
            let bytes = jpeg.bytes
            let limits = ImageLimits(maxSide: 65_535, maxPixels: .max)
            let read = try ImageHeader.dimensions(of: .jpeg, in: bytes, limits: limits)
            let turned = orientation >= 5
            #expect(read.width == (turned ? height : width))
            #expect(read.height == (turned ? width : height))
            #expect(read.orientation.rawValue == (orientation == 0 ? 1 : orientation))

            let cut = cutSeed % jpeg.headerLength
            #expect(throws: ImageHeaderError.self) {
                try ImageHeader.dimensions(of: .jpeg, in: bytes.prefix(cut), limits: limits)
            }
            do throws(ImageHeaderError) {
                _ = try ImageHeader.dimensions(of: .jpeg, in: bytes.prefix(cut), limits: limits)
            } catch .truncated(_, let needed, let available) {
                #expect(available == cut)
                #expect(needed > cut && needed <= jpeg.headerLength)
            } catch {
                Issue.record("a cut at \(cut) gave \(error)")
            }
        }
    }

    /// Markup wrapped in any prolog stays markup: never an image, never inline.
    @Test func markupInAnyPrologIsNeverAnImage() async {
        let prologParts = [
            "", " ", "\n\t", "<?xml version=\"1.0\"?>", "<!-- c -->", "<?xml-stylesheet href=\"x\"?>",
            "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"x\">", "\u{FEFF}",
        ]
        let roots = ["<svg>", "<svg ", "<SVG/>", "<svg:svg ", "<html>", "<HTML ", "<!DOCTYPE html>", "<script>", "<body>"]
        let documents = zip(Gen.element(of: prologParts).array(of: 0...5), Gen.element(of: roots), Gen.uint8().array(of: 0...40))
        await propertyCheck(count: 1_000, input: documents) { prolog, root, tail in
            // The byte order mark only counts first, as in a real file.
            let parts = prolog.compactMap { $0 }.filter { $0 != "\u{FEFF}" }
            let bom = prolog.first == "\u{FEFF}" ? "\u{FEFF}" : ""
            let bytes = ascii(bom + parts.joined() + root!) + tail
            for isWholeFile in [true, false] {
                let format = MediaSniffer.sniff(bytes, isWholeFile: isWholeFile)
                #expect([MediaFormat.svg, .html].contains(format), "\(String(decoding: bytes, as: UTF8.self))")
                #expect(format.kind == .file)
                #expect(!format.isSafeToServeInline)
            }
        }
    }

    /// Valid UTF-8 without NUL is text; cut anywhere, its prefix still is.
    @Test func anyTextIsTextAndSoIsAnyPrefixOfIt() async {
        let scalars = Gen.element(of: Array("aZ09 \n\t{}<>&é€日😀\u{7F}\u{80}\u{FFFD}\u{10FFFF}".unicodeScalars))
        await propertyCheck(count: 1_000, input: scalars.array(of: 1...60), Gen.int(in: 0...1_000)) { text, cutSeed in
            var string = String.UnicodeScalarView()
            string.append(contentsOf: text.compactMap { $0 })
            // Starting with a letter keeps markup out of it.
            let bytes = ascii("x") + Array(String(string).utf8)
            #expect(MediaSniffer.sniff(bytes, isWholeFile: true) == .plainText)
            let cut = 1 + cutSeed % bytes.count
            #expect(MediaSniffer.sniff(bytes.prefix(cut), isWholeFile: false) == .plainText)
        }
    }

    @Test func blurhashValidationNeverCrashes() async {
        let characters = Gen.element(of: Array("0123456789AZaz#~|{}[]^_ /é\u{0}") + BlurhashTests.alphabet)
        await propertyCheck(count: 1_000, input: characters.array(of: 0...40)) { characters in
            let string = String(characters.compactMap { $0 })
            do throws(BlurhashError) {
                let hash = try Blurhash(validating: string)
                #expect(string.count == 4 + 2 * hash.componentsX * hash.componentsY)
            } catch {
                #expect(!error.reason.isEmpty)
            }
        }
    }
}
