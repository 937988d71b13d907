/// Recognises what an upload is from its first bytes, whatever the client
/// declared.
///
/// Binary signatures are checked first (images, PDF, ZIP, ISO media, EBML,
/// Ogg, RIFF, FLAC, MP3); then markup near the start (SVG, HTML, XML, see
/// ``MarkupSniffer``); then whether the bytes are UTF-8 text without NUL
/// bytes; anything else is ``MediaFormat/octetStream``. An empty upload is
/// ``MediaFormat/octetStream`` too.
public enum MediaSniffer {
    /// The format of an upload from its first bytes.
    ///
    /// - Parameters:
    ///   - bytes: the start of the file (64 KiB is plenty), or all of it.
    ///   - isWholeFile: whether `bytes` is the whole file. When it is only a
    ///     prefix, a UTF-8 sequence cut by its end still counts as text.
    public static func sniff(_ bytes: some Collection<UInt8>, isWholeFile: Bool) -> MediaFormat {
        sniff(ByteView(bytes), isWholeFile: isWholeFile)
    }

    static func sniff(_ view: ByteView, isWholeFile: Bool) -> MediaFormat {
        if let format = binaryFormat(view) { return format }
        if let format = MarkupSniffer.markupFormat(view) { return format }
        if view.count > 0, UTF8Text.isText(view.bytes, isWholeFile: isWholeFile) { return .plainText }
        return .octetStream
    }

    static func binaryFormat(_ view: ByteView) -> MediaFormat? {
        if view.matches(PNGHeader.signature) { return .png }
        if view.matches([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if GIFHeader.signatures.contains(where: { view.matches($0) }) { return .gif }
        if view.matches("RIFF") {
            if view.matches("WEBP", at: 8) { return .webp }
            if view.matches("WAVE", at: 8) { return .wav }
            if view.matches("AVI ", at: 8) { return .avi }
            return nil
        }
        // Big-endian RIFF and the 64-bit RF64 hold WAVE only.
        if view.matches("RIFX") || view.matches("RF64") { return view.matches("WAVE", at: 8) ? .wav : nil }
        if view.matches("%PDF-") { return .pdf }
        // A local file header, the end of an empty archive, or a spanned archive.
        if view.matches([0x50, 0x4B, 0x03, 0x04]) || view.matches([0x50, 0x4B, 0x05, 0x06])
            || view.matches([0x50, 0x4B, 0x07, 0x08])
        {
            return .zip
        }
        if let format = ContainerSniffer.isoMediaFormat(view) { return format }
        if let format = ContainerSniffer.ebmlFormat(view) { return format }
        if let format = ContainerSniffer.oggFormat(view) { return format }
        if view.matches("fLaC") { return .flac }
        if ContainerSniffer.isMP3(view) { return .mp3 }
        return nil
    }
}
