/// Bounds-checked reads from the start of an upload: every read past the end
/// answers `nil` instead of trapping, so a parser can tell a short prefix
/// from a broken file.
struct ByteView: Sendable {
    let bytes: [UInt8]

    init(_ bytes: some Collection<UInt8>) {
        self.bytes = Array(bytes)
    }

    var count: Int { bytes.count }

    /// Whether the bytes `offset ..< offset + length` are all there.
    func has(_ offset: Int, _ length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= count - length
    }

    func byte(at offset: Int) -> UInt8? {
        has(offset, 1) ? bytes[offset] : nil
    }

    /// Whether `pattern` stands at `offset` (false when the bytes end first).
    func matches(_ pattern: [UInt8], at offset: Int = 0) -> Bool {
        guard has(offset, pattern.count) else { return false }
        for (index, expected) in pattern.enumerated() where bytes[offset + index] != expected { return false }
        return true
    }

    func matches(_ ascii: String, at offset: Int = 0) -> Bool {
        matches(Array(ascii.utf8), at: offset)
    }

    /// Like ``matches(_:at:)-(String,_)`` but ignoring ASCII case.
    func matchesIgnoringCase(_ ascii: String, at offset: Int) -> Bool {
        let pattern = Array(ascii.utf8)
        guard has(offset, pattern.count) else { return false }
        for (index, expected) in pattern.enumerated()
        where asciiLowercased(bytes[offset + index]) != asciiLowercased(expected) {
            return false
        }
        return true
    }

    func uint16BigEndian(at offset: Int) -> Int? {
        guard has(offset, 2) else { return nil }
        return Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
    }

    func uint16LittleEndian(at offset: Int) -> Int? {
        guard has(offset, 2) else { return nil }
        return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
    }

    func uint24LittleEndian(at offset: Int) -> Int? {
        guard has(offset, 3) else { return nil }
        return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
    }

    func uint32BigEndian(at offset: Int) -> Int? {
        guard has(offset, 4) else { return nil }
        return Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8
            | Int(bytes[offset + 3])
    }

    func uint32LittleEndian(at offset: Int) -> Int? {
        guard has(offset, 4) else { return nil }
        return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
            | Int(bytes[offset + 3]) << 24
    }

    /// A 16- or 32-bit integer in the byte order a TIFF header names.
    func uint16(at offset: Int, bigEndian: Bool) -> Int? {
        bigEndian ? uint16BigEndian(at: offset) : uint16LittleEndian(at: offset)
    }

    func uint32(at offset: Int, bigEndian: Bool) -> Int? {
        bigEndian ? uint32BigEndian(at: offset) : uint32LittleEndian(at: offset)
    }
}

func asciiLowercased(_ byte: UInt8) -> UInt8 {
    (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
}
