/// Audio and video containers, each told apart by what its first structure says.
enum ContainerSniffer {
    // MARK: ISO base media (MP4, QuickTime, 3GPP, M4A, HEIF, AVIF)

    /// An `ftyp` box first: its major brand names the format, its compatible
    /// brands say whether a generic MP4 reader can play it. Older QuickTime files
    /// start with another atom instead (`moov`, `mdat`, `wide`, `free`, `skip`,
    /// `pnot`).
    static func isoMediaFormat(_ view: ByteView) -> MediaFormat? {
        guard let size = view.uint32BigEndian(at: 0) else { return nil }
        if view.matches("ftyp", at: 4) {
            guard size >= 16, size % 4 == 0, view.has(8, 4) else { return nil }
            return ftypFormat(view, boxSize: size)
        }
        // A legacy QuickTime atom: its size's top byte is 0 (under 16 MiB), which
        // no text file starts with, so "I'm free" is not a film.
        let legacyAtoms = ["moov", "mdat", "wide", "free", "skip", "pnot"]
        if size >= 8, size < 1 << 24, legacyAtoms.contains(where: { view.matches($0, at: 4) }) {
            return .quickTime
        }
        return nil
    }

    private static func ftypFormat(_ view: ByteView, boxSize: Int) -> MediaFormat? {
        func brand(at offset: Int) -> String { String(decoding: view.bytes[offset..<offset + 4], as: UTF8.self) }
        let major = brand(at: 8)
        var compatible: [String] = []
        var offset = 16
        while offset + 4 <= min(boxSize, view.count) {
            compatible.append(brand(at: offset))
            offset += 4
        }
        let brands = [major] + compatible
        switch major {
        case "qt  ": return .quickTime
        case "M4A ", "M4B ", "M4P ": return .m4a
        case "avif", "avis": return .avif
        case "heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs": return .heif
        case "mif1", "msf1": return brands.contains { $0 == "avif" || $0 == "avis" } ? .avif : .heif
        // Canon raw photos (CR3) list "isom" too, but are no film.
        case "crx ": return nil
        default: break
        }
        if major.hasPrefix("3gp") { return .threeGPP }
        if major.hasPrefix("3g2") { return .threeGPP2 }
        let mp4Families = ["mp4", "iso", "avc1", "M4V", "dash", "f4v", "mmp4"]
        if brands.contains(where: { brand in mp4Families.contains { brand.hasPrefix($0) } }) { return .mp4 }
        if brands.contains("qt  ") { return .quickTime }
        // Another ISO family (camera raw, JPEG 2000, ...): not something to play.
        return nil
    }

    // MARK: EBML (WebM, Matroska)

    /// The EBML header's DocType element names the format; an unknown DocType is
    /// not a video.
    static func ebmlFormat(_ view: ByteView) -> MediaFormat? {
        guard view.matches([0x1A, 0x45, 0xDF, 0xA3]),
            let (headerSize, sizeLength) = ebmlNumber(view, at: 4, maxLength: 8, keepMarker: false)
        else { return nil }
        var offset = 4 + sizeLength
        let headerEnd = offset + min(headerSize, view.count)
        while offset < min(headerEnd, view.count) {
            guard let (id, idLength) = ebmlNumber(view, at: offset, maxLength: 4, keepMarker: true),
                let (size, sizeLength) = ebmlNumber(view, at: offset + idLength, maxLength: 8, keepMarker: false)
            else { return nil }
            let dataStart = offset + idLength + sizeLength
            if id == 0x4282 {
                guard size <= 64, view.has(dataStart, size) else { return nil }
                // DocType is ASCII, sometimes padded with NULs.
                let docType = String(decoding: view.bytes[dataStart..<dataStart + size].prefix { $0 != 0 }, as: UTF8.self)
                switch docType {
                case "webm": return .webm
                case "matroska": return .matroska
                default: return nil
                }
            }
            guard size < view.count else { return nil }
            offset = dataStart + size
        }
        return nil
    }

    /// An EBML variable-length integer: the count of leading zero bits of the
    /// first byte gives its length. IDs keep the length marker, sizes drop it.
    private static func ebmlNumber(
        _ view: ByteView, at offset: Int, maxLength: Int, keepMarker: Bool
    ) -> (value: Int, length: Int)? {
        guard let first = view.byte(at: offset), first != 0 else { return nil }
        let length = first.leadingZeroBitCount + 1
        guard length <= maxLength, view.has(offset, length) else { return nil }
        var value = keepMarker ? Int(first) : Int(first) & (0xFF >> length)
        for index in 1..<length { value = value << 8 | Int(view.bytes[offset + index]) }
        return (value, length)
    }

    // MARK: Ogg

    /// The first page's first packet names the codec of the first stream.
    static func oggFormat(_ view: ByteView) -> MediaFormat? {
        guard view.matches([0x4F, 0x67, 0x67, 0x53, 0x00]) else { return nil }
        guard let segments = view.byte(at: 26) else { return .ogg }
        let packet = 27 + Int(segments)
        if view.matches([0x80] + Array("theora".utf8), at: packet) { return .oggVideo }
        let audioCodecs: [[UInt8]] = [
            [0x01] + Array("vorbis".utf8), Array("OpusHead".utf8), [0x7F] + Array("FLAC".utf8),
            Array("Speex   ".utf8),
        ]
        if audioCodecs.contains(where: { view.matches($0, at: packet) }) { return .oggAudio }
        return .ogg
    }

    // MARK: MP3

    /// An ID3v2 tag, or two MPEG audio Layer III frame headers in a row (one
    /// alone is too easily found in random bytes).
    static func isMP3(_ view: ByteView) -> Bool {
        if view.matches("ID3"), let major = view.byte(at: 3), (2...4).contains(major),
            let revision = view.byte(at: 4), revision != 0xFF, view.has(6, 4),
            view.bytes[6..<10].allSatisfy({ $0 < 0x80 })
        {
            return true
        }
        guard let length = mpegLayer3FrameLength(view, at: 0) else { return false }
        return mpegLayer3FrameLength(view, at: length) != nil
    }

    private static let mpeg1Bitrates = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
    private static let mpeg2Bitrates = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]

    /// The length in bytes of the Layer III frame whose header is at `offset`,
    /// or nil when no valid header is there.
    static func mpegLayer3FrameLength(_ view: ByteView, at offset: Int) -> Int? {
        guard view.has(offset, 4) else { return nil }
        let (b1, b2, b3) = (view.bytes[offset + 1], view.bytes[offset + 2], view.bytes[offset + 3])
        guard view.bytes[offset] == 0xFF, b1 & 0xE0 == 0xE0 else { return nil }
        let version = (b1 >> 3) & 3  // 0: MPEG 2.5, 1: reserved, 2: MPEG 2, 3: MPEG 1
        let layer = (b1 >> 1) & 3  // 1: Layer III
        let bitrateIndex = Int(b2 >> 4)
        let sampleRateIndex = Int((b2 >> 2) & 3)
        guard version != 1, layer == 1, (1...14).contains(bitrateIndex), sampleRateIndex != 3, b3 & 3 != 2 else {
            return nil
        }
        let bitrate = (version == 3 ? mpeg1Bitrates : mpeg2Bitrates)[bitrateIndex] * 1000
        let sampleRate = [44_100, 48_000, 32_000][sampleRateIndex] >> (version == 3 ? 0 : version == 2 ? 1 : 2)
        let padding = Int((b2 >> 1) & 1)
        return (version == 3 ? 144 : 72) * bitrate / sampleRate + padding
    }
}
