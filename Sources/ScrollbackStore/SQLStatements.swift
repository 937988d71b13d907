/// Splits a migration file into its statements. PostgresNIO speaks only the
/// extended protocol, which takes one statement per query, so a file of
/// several is run statement by statement (inside the migration's transaction).
///
/// Semicolons inside comments (`--`, `/* */`, nested), quoted strings (`'...'`,
/// `E'...'`), quoted identifiers (`"..."`) and dollar-quoted bodies (`$$...$$`,
/// `$tag$...$tag$`) do not end a statement.
enum SQLStatements {
    static func split(_ sql: String) -> [String] {
        let chars = Array(sql.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0

        func flush() {
            let text = String(current).trimmingWhitespace()
            if !text.isEmpty && !isOnlyComments(text) { statements.append(text) }
            current = String.UnicodeScalarView()
        }

        func consume(until terminator: [Unicode.Scalar]) {
            // Copies up to and including `terminator`, or to the end.
            while index < chars.count {
                if Array(chars[index..<min(index + terminator.count, chars.count)]) == terminator {
                    current.append(contentsOf: terminator)
                    index += terminator.count
                    return
                }
                current.append(chars[index])
                index += 1
            }
        }

        while index < chars.count {
            let c = chars[index]
            let next: Unicode.Scalar? = index + 1 < chars.count ? chars[index + 1] : nil
            switch c {
            case "-" where next == "-":
                consume(until: ["\n"])
            case "/" where next == "*":
                var depth = 0
                while index < chars.count {
                    if chars[index] == "/" && index + 1 < chars.count && chars[index + 1] == "*" {
                        depth += 1
                        current.append(contentsOf: ["/", "*"])
                        index += 2
                    } else if chars[index] == "*" && index + 1 < chars.count && chars[index + 1] == "/" {
                        depth -= 1
                        current.append(contentsOf: ["*", "/"])
                        index += 2
                        if depth == 0 { break }
                    } else {
                        current.append(chars[index])
                        index += 1
                    }
                }
            case "'", "\"":
                // A doubled quote inside is an escaped quote: the loop simply
                // closes and reopens, which leaves the text intact.
                current.append(c)
                index += 1
                consume(until: [c])
            case "$":
                // $tag$ where tag is empty or an identifier not starting with a digit.
                var end = index + 1
                while end < chars.count,
                    chars[end] == "_" || chars[end].properties.isAlphabetic
                        || (end > index + 1 && ("0"..."9").contains(chars[end]))
                {
                    end += 1
                }
                if end < chars.count && chars[end] == "$" {
                    let tag = Array(chars[index...end])
                    current.append(contentsOf: tag)
                    index = end + 1
                    consume(until: tag)
                } else {
                    current.append(c)
                    index += 1
                }
            case ";":
                index += 1
                flush()
            default:
                current.append(c)
                index += 1
            }
        }
        flush()
        return statements
    }

    private static func isOnlyComments(_ text: String) -> Bool {
        text.split(separator: "\n").allSatisfy { $0.trimmingWhitespace().isEmpty || $0.trimmingWhitespace().hasPrefix("--") }
    }
}

extension StringProtocol {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
