/// Markup a browser would render, and so could run script in: SVG, HTML and
/// XML. Recognised from the start of the bytes, never as images, so the
/// server serves them as attachments.
///
/// After an optional UTF-8 byte order mark and white space, the prolog is
/// walked (XML declaration, processing instructions, comments, a DOCTYPE) up
/// to the first element, whose name decides: `svg` is SVG, one of the HTML
/// names browsers sniff for (WHATWG MIME Sniffing, "identifying a resource
/// with an unknown MIME type") is HTML, any other is XML when an XML
/// declaration came first. `<!DOCTYPE html` and `<!DOCTYPE svg` decide at
/// once. Names are compared ignoring case, which errs toward markup. A file
/// that starts with a comment is HTML unless an XML declaration or an SVG
/// root says otherwise, as WHATWG sniffing treats a leading `<!--`.
enum MarkupSniffer {
    /// The tags that make a document HTML when they start it (WHATWG's list).
    static let htmlElements: Set<String> = [
        "html", "head", "script", "iframe", "h1", "div", "font", "table", "a", "style", "title", "b", "body",
        "br", "p",
    ]

    static func markupFormat(_ view: ByteView) -> MediaFormat? {
        var offset = view.matches([0xEF, 0xBB, 0xBF]) ? 3 : 0
        var sawXMLDeclaration = false
        var startsWithComment = false
        var isFirstConstruct = true
        prolog: while true {
            offset = skipWhitespace(view, from: offset)
            guard offset < view.count else { break prolog }
            guard view.bytes[offset] == UInt8(ascii: "<") else { break prolog }
            // Where the walk goes on, past the construct at `offset`; nil when it
            // does not end within the bytes.
            let next: Int?
            if view.matchesIgnoringCase("<?xml", at: offset) {
                sawXMLDeclaration = true
                next = find("?>", in: view, from: offset + 5)
            } else if view.matches("<?", at: offset) {
                next = find("?>", in: view, from: offset + 2)
            } else if view.matches("<!--", at: offset) {
                startsWithComment = startsWithComment || isFirstConstruct
                next = find("-->", in: view, from: offset + 4)
            } else if view.matchesIgnoringCase("<!doctype", at: offset) {
                let nameStart = skipWhitespace(view, from: offset + 9)
                let name = elementName(view, at: nameStart)
                if name == "html" { return .html }
                if name == "svg" { return .svg }
                next = doctypeEnd(view, from: nameStart)
            } else {
                guard let name = elementName(view, at: offset + 1) else { break prolog }
                // A namespace prefix (`svg:svg`) does not change what the element is.
                let localName = name.split(separator: ":").last.map(String.init) ?? name
                if localName == "svg" { return .svg }
                if htmlElements.contains(localName) { return .html }
                return sawXMLDeclaration ? .xml : startsWithComment ? .html : nil
            }
            guard let next else { break prolog }
            offset = next
            isFirstConstruct = false
        }
        if sawXMLDeclaration { return .xml }
        if startsWithComment { return .html }
        return nil
    }

    /// The lowercased name at `offset` when a tag-ending byte (white space, `>`
    /// or `/`) follows it, or the bytes end right after it.
    private static func elementName(_ view: ByteView, at offset: Int) -> String? {
        var end = offset
        while end < view.count, isNameByte(view.bytes[end]) { end += 1 }
        guard end > offset else { return nil }
        if end < view.count {
            let next = view.bytes[end]
            guard isWhitespace(next) || next == UInt8(ascii: ">") || next == UInt8(ascii: "/") else { return nil }
        }
        return String(decoding: view.bytes[offset..<end].map(asciiLowercased), as: UTF8.self)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: ":"), UInt8(ascii: "-"), UInt8(ascii: "_"),
            UInt8(ascii: "."):
            true
        default: false
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    private static func skipWhitespace(_ view: ByteView, from offset: Int) -> Int {
        var offset = offset
        while offset < view.count, isWhitespace(view.bytes[offset]) { offset += 1 }
        return offset
    }

    /// The offset just past the first `pattern` at or after `offset`.
    private static func find(_ pattern: String, in view: ByteView, from offset: Int) -> Int? {
        let needle = Array(pattern.utf8)
        var index = offset
        while index + needle.count <= view.count {
            if view.matches(needle, at: index) { return index + needle.count }
            index += 1
        }
        return nil
    }

    /// The offset just past a DOCTYPE's closing `>`, stepping over an internal
    /// subset in brackets and quoted identifiers.
    private static func doctypeEnd(_ view: ByteView, from offset: Int) -> Int? {
        var index = offset
        var bracketDepth = 0
        var quote: UInt8?
        while index < view.count {
            let byte = view.bytes[index]
            index += 1
            if let open = quote {
                if byte == open { quote = nil }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = byte
            case UInt8(ascii: "["): bracketDepth += 1
            case UInt8(ascii: "]"): bracketDepth = max(0, bracketDepth - 1)
            case UInt8(ascii: ">") where bracketDepth == 0: return index
            default: break
            }
        }
        return nil
    }
}
