import ScrollbackMedia
import Testing

@Suite struct SampleTests {
    @Test(arguments: Samples.all) func everySampleIsMeasured(sample: Sample) throws {
        let read = try size(sample.format, sample.bytes)
        #expect(read == sample.expected)
    }

    @Test(arguments: Samples.all) func everySampleIsSniffedAsItsFormatAndInspected(sample: Sample) throws {
        #expect(MediaSniffer.sniff(sample.bytes, isWholeFile: true) == sample.format.mediaFormat)
        let inspection = try MediaInspector.inspect(sample.bytes, isWholeFile: true)
        #expect(inspection.format == sample.format.mediaFormat)
        #expect(inspection.kind == .image)
        #expect(inspection.image == sample.expected)
    }

    /// Cut at every byte: each prefix gives the full result or a truncation
    /// that asks for more than it has, never another size, never a crash.
    @Test(arguments: Samples.all) func everyPrefixGivesTheSizeOrATruncation(sample: Sample) throws {
        var firstSuccess: Int?
        for length in 0...sample.bytes.count {
            let prefix = Array(sample.bytes.prefix(length))
            do throws(ImageHeaderError) {
                let read = try ImageHeader.dimensions(of: sample.format, in: prefix)
                #expect(read == sample.expected, "prefix of \(length) bytes")
                if firstSuccess == nil { firstSuccess = length }
            } catch .truncated(let format, let needed, let available) {
                #expect(format == sample.format)
                #expect(firstSuccess == nil, "a longer prefix (\(length) bytes) lost the size")
                #expect(available == length)
                #expect(needed > length, "prefix of \(length) bytes asks for \(needed)")
                if let headerLength = sample.headerLength {
                    #expect(needed <= headerLength, "prefix of \(length) bytes asks for more than the header")
                }
            } catch {
                Issue.record("prefix of \(length) bytes: \(error)")
            }
        }
        let first = try #require(firstSuccess)
        if let headerLength = sample.headerLength { #expect(first == headerLength) }
    }

    /// The server's view of a cut upload: a whole file that ends inside an
    /// image header is refused, never given a size it does not have.
    @Test(arguments: Samples.all) func aTruncatedUploadNeverGetsASize(sample: Sample) throws {
        let headerLength = try #require(
            (0...sample.bytes.count).first { (try? size(sample.format, Array(sample.bytes.prefix($0)))) != nil })
        for length in 0..<headerLength {
            let prefix = Array(sample.bytes.prefix(length))
            do throws(ImageHeaderError) {
                let inspection = try MediaInspector.inspect(prefix, isWholeFile: true)
                #expect(inspection.image == nil, "\(length) bytes")
                #expect(inspection.kind != .image, "\(length) bytes")
            } catch .truncated {
                // Refused: what the server answers with a 4xx.
            } catch {
                Issue.record("\(length) bytes: \(error)")
            }
        }
    }
}
