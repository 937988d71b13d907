import Foundation
import ScrollbackMedia
import Testing

/// An image with the size it must be read as: built in code, or a real
/// encoder's file from Fixtures/ (see its README).
struct Sample: Sendable, CustomTestStringConvertible {
    var name: String
    var format: ImageFormat
    var bytes: [UInt8]
    var expected: ImageDimensions
    /// The shortest prefix that holds the size, where the test knows it.
    var headerLength: Int?

    var testDescription: String { name }
}

enum Samples {
    static func fixture(_ name: String) -> [UInt8] {
        guard let url = Bundle.module.url(forResource: name, withExtension: nil, subdirectory: "Fixtures"),
            let data = try? Data(contentsOf: url)
        else { fatalError("no fixture \(name)") }
        return [UInt8](data)
    }

    static func dimensions(_ format: ImageFormat, _ width: Int, _ height: Int, _ orientation: ExifOrientation = .up)
        -> ImageDimensions
    {
        ImageDimensions(format: format, encodedWidth: width, encodedHeight: height, orientation: orientation)
    }

    static let real: [Sample] = [
        Sample(name: "png-7x5.png", format: .png, bytes: fixture("png-7x5.png"), expected: dimensions(.png, 7, 5), headerLength: 24),
        Sample(name: "gif87a-7x5.gif", format: .gif, bytes: fixture("gif87a-7x5.gif"), expected: dimensions(.gif, 7, 5), headerLength: 10),
        Sample(name: "gif89a-7x5.gif", format: .gif, bytes: fixture("gif89a-7x5.gif"), expected: dimensions(.gif, 7, 5), headerLength: 10),
        Sample(name: "jpeg-baseline-7x5.jpg", format: .jpeg, bytes: fixture("jpeg-baseline-7x5.jpg"), expected: dimensions(.jpeg, 7, 5)),
        Sample(name: "jpeg-progressive-7x5.jpg", format: .jpeg, bytes: fixture("jpeg-progressive-7x5.jpg"), expected: dimensions(.jpeg, 7, 5)),
        Sample(
            name: "jpeg-exif-big-endian-orientation6-7x5.jpg", format: .jpeg,
            bytes: fixture("jpeg-exif-big-endian-orientation6-7x5.jpg"), expected: dimensions(.jpeg, 7, 5, .right)),
        Sample(
            name: "jpeg-exif-little-endian-orientation8-7x5.jpg", format: .jpeg,
            bytes: fixture("jpeg-exif-little-endian-orientation8-7x5.jpg"), expected: dimensions(.jpeg, 7, 5, .left)),
        Sample(
            name: "jpeg-exif-thumbnail-orientation6-7x5.jpg", format: .jpeg,
            bytes: fixture("jpeg-exif-thumbnail-orientation6-7x5.jpg"), expected: dimensions(.jpeg, 7, 5, .right)),
        Sample(name: "webp-lossy-7x5.webp", format: .webp, bytes: fixture("webp-lossy-7x5.webp"), expected: dimensions(.webp, 7, 5), headerLength: 30),
        Sample(name: "webp-lossless-7x5.webp", format: .webp, bytes: fixture("webp-lossless-7x5.webp"), expected: dimensions(.webp, 7, 5), headerLength: 25),
        Sample(
            name: "webp-extended-alpha-7x5.webp", format: .webp, bytes: fixture("webp-extended-alpha-7x5.webp"),
            expected: dimensions(.webp, 7, 5), headerLength: 30),
    ]

    static let built: [Sample] = {
        var samples = [
            Sample(name: "built PNG", format: .png, bytes: Build.png(width: 300, height: 200), expected: dimensions(.png, 300, 200), headerLength: 24),
            Sample(name: "built GIF87a", format: .gif, bytes: Build.gif(version: "87a", width: 300, height: 200), expected: dimensions(.gif, 300, 200), headerLength: 10),
            Sample(name: "built GIF89a", format: .gif, bytes: Build.gif(version: "89a", width: 300, height: 200), expected: dimensions(.gif, 300, 200), headerLength: 10),
            Sample(name: "built VP8", format: .webp, bytes: Build.webpLossy(width: 300, height: 200), expected: dimensions(.webp, 300, 200), headerLength: 30),
            Sample(name: "built VP8L", format: .webp, bytes: Build.webpLossless(width: 300, height: 200), expected: dimensions(.webp, 300, 200), headerLength: 25),
            Sample(name: "built VP8X", format: .webp, bytes: Build.webpExtended(width: 300, height: 200), expected: dimensions(.webp, 300, 200), headerLength: 30),
        ]
        let jpegs = [
            ("baseline", Build.JPEG(width: 300, height: 200)),
            ("progressive", Build.JPEG(width: 300, height: 200, sofMarker: 0xC2)),
            ("EXIF MM 6", Build.JPEG(width: 300, height: 200, orientation: 6)),
            ("EXIF II 7 with fill", Build.JPEG(width: 300, height: 200, orientation: 7, exifBigEndian: false, fill: 3)),
            ("APP segments", Build.JPEG(width: 300, height: 200, orientation: 3, extraSegments: [(0xE2, 500), (0xFE, 40)])),
        ]
        for (name, jpeg) in jpegs {
            let orientation = jpeg.orientation.flatMap(ExifOrientation.init(rawValue:)) ?? .up
            samples.append(
                Sample(
                    name: "built JPEG \(name)", format: .jpeg, bytes: jpeg.bytes,
                    expected: dimensions(.jpeg, 300, 200, orientation), headerLength: jpeg.headerLength))
        }
        return samples
    }()

    static let all = real + built
}
