import PropertyBased
import ScrollbackLayout
import Testing

/// The attachment box model: pictures scaled down (never up) to the message
/// column and the maximum height, rows for files, all stacked under the text.
@Suite struct AttachmentBoxTests {
    let metrics = TextMetrics.standard
    /// An iPhone-sized screen: the column is 390 * 0.75 = 292.5 points.
    let width = 390.0
    let column = 292.5
    let oneLine = 22.0 + 16

    func image(_ width: Int, _ height: Int) -> LayoutAttachment {
        LayoutAttachment(kind: .image, pixelWidth: width, pixelHeight: height)
    }

    @Test func defaultsAreTheDocumentedBoxMetrics() throws {
        #expect(metrics.maxAttachmentHeight == 320)
        #expect(metrics.attachmentRowHeight == 56)
        #expect(metrics.attachmentSpacing == 4)
        #expect(try metrics.columnWidth(viewportWidth: width) == column)
    }

    @Test func aSmallPictureKeepsItsPixelSize() throws {
        #expect(try metrics.attachmentBox(for: image(120, 90), viewportWidth: width) == .init(shape: .media, width: 120, height: 90))
        // Exactly the column wide and the maximum tall still fits as it is.
        #expect(try metrics.attachmentBox(for: image(292, 320), viewportWidth: width) == .init(shape: .media, width: 292, height: 320))
    }

    @Test func aWidePictureIsScaledDownToTheColumn() throws {
        // 1200 x 900: the width limits it (292.5 / 1200 < 320 / 900).
        let box = try metrics.attachmentBox(for: image(1200, 900), viewportWidth: width)
        #expect(box == .init(shape: .media, width: 292.5, height: 219.375))  // 900 * 292.5 / 1200
    }

    @Test func aTallPictureIsScaledDownToTheMaximumHeight() throws {
        // 600 x 1600: the height limits it (320 / 1600 < 292.5 / 600).
        let box = try metrics.attachmentBox(for: image(600, 1600), viewportWidth: width)
        #expect(box == .init(shape: .media, width: 120, height: 320))  // 600 * 320 / 1600
        // Narrow but taller than the maximum: scaled by the height only.
        #expect(try metrics.attachmentBox(for: image(100, 400), viewportWidth: width) == .init(shape: .media, width: 80, height: 320))
    }

    @Test func aVideoOfKnownSizeIsAPictureAndAnythingElseIsARow() throws {
        let video = LayoutAttachment(kind: .video, pixelWidth: 1920, pixelHeight: 1080)
        #expect(try metrics.attachmentBox(for: video, viewportWidth: width) == .init(shape: .media, width: 292.5, height: 164.53125))
        let row = AttachmentBox(shape: .row, width: column, height: 56)
        for attachment in [
            LayoutAttachment(kind: .file), LayoutAttachment(kind: .file, pixelWidth: 10, pixelHeight: 10),
            LayoutAttachment(kind: .image), LayoutAttachment(kind: .image, pixelWidth: 100),
            LayoutAttachment(kind: .video, pixelWidth: 0, pixelHeight: 100),
            LayoutAttachment(kind: .image, pixelWidth: -4, pixelHeight: 100),
            LayoutAttachment(kindName: "sticker", pixelWidth: 10, pixelHeight: 10),
        ] {
            #expect(try metrics.attachmentBox(for: attachment, viewportWidth: width) == row, "\(attachment)")
        }
        #expect(LayoutAttachment(kindName: "image", pixelWidth: 3, pixelHeight: 4) == image(3, 4))
    }

    @Test func textAndAttachmentsAddUp() throws {
        let photo = image(1200, 900)  // 219.375 tall
        let file = LayoutAttachment(kind: .file)  // 56 tall
        // Attachments only: no text line at all.
        let only = try metrics.estimate(text: "", attachments: [photo], viewportWidth: width)
        #expect(only.textHeight == 0 && only.height == 219.375)
        // A caption: its bubble, then the picture.
        let captioned = try metrics.estimate(text: "look", attachments: [photo], viewportWidth: width)
        #expect(captioned.textHeight == oneLine && captioned.height == oneLine + 219.375)
        // Several attachments stack 4 points apart.
        let three = try metrics.estimate(text: "hi", attachments: [photo, file, image(50, 50)], viewportWidth: width)
        #expect(three.attachmentBoxes.map(\.height) == [219.375, 56, 50])
        #expect(three.height == oneLine + 219.375 + 56 + 50 + 2 * 4)
        // Custom box metrics.
        let custom = TextMetrics(maxAttachmentHeight: 100, attachmentRowHeight: 40, attachmentSpacing: 10)
        #expect(try custom.estimatedHeight(of: "", attachments: [photo, file], viewportWidth: width) == 100 + 40 + 10)
    }

    @Test func theTextOnlyPathIsTheSameRule() throws {
        for text in ["", "hi", String(repeating: "long ", count: 30), "a\nb"] {
            let estimate = try metrics.estimate(text: text, viewportWidth: width)
            #expect(estimate.attachmentBoxes.isEmpty)
            #expect(try metrics.estimatedHeight(of: text, viewportWidth: width) == estimate.height)
            #expect(estimate.height == estimate.textHeight)
        }
        let messages = [LayoutMessage(text: "a"), LayoutMessage(text: "", attachments: [image(10, 20)])]
        #expect(try metrics.estimatedHeights(of: messages, viewportWidth: width) == [oneLine, 20])
        #expect(try metrics.estimates(of: messages, viewportWidth: width) == (try messages.map { try metrics.estimate($0, viewportWidth: width) }))
    }

    @Test func invalidBoxMetricsAreRejectedWithTheirField() {
        for (broken, field) in [
            (TextMetrics(maxAttachmentHeight: 0), "max_attachment_height"),
            (TextMetrics(attachmentRowHeight: -1), "attachment_row_height"),
            (TextMetrics(attachmentSpacing: 20_000), "attachment_spacing"),
        ] {
            let error = #expect(throws: LayoutError.self) {
                try broken.estimate(text: "", attachments: [image(1, 1)], viewportWidth: 390)
            }
            #expect(error?.field == field)
        }
        let error = #expect(throws: LayoutError.self) { try metrics.attachmentBox(for: image(1, 1), viewportWidth: -1) }
        #expect(error?.field == "viewport_width")
    }

    // MARK: Properties

    /// Pixel sides from 1 to 65,535 (the largest a stored image has), most
    /// of them in the range of real photos and screenshots.
    static let sides = zip(Gen.int(in: 0...3), Gen.int(in: 0...65_534)).map { scale, n in
        n % [64, 1_000, 8_000, 65_535][scale] + 1
    }

    static let box = zip(sides, sides, points(0...1_600), points(1...1_000), Gen.int(in: 1...10_000))
        .map { BoxCase(pixelWidth: $0.0, pixelHeight: $0.1, viewportWidth: $0.2, maxHeight: $0.3, fraction: Double($0.4) / 10_000) }

    struct BoxCase: Sendable, CustomStringConvertible {
        var pixelWidth: Int
        var pixelHeight: Int
        var viewportWidth: Double
        var maxHeight: Double
        var fraction: Double

        var metrics: TextMetrics { TextMetrics(maxWidthFraction: fraction, maxAttachmentHeight: maxHeight) }
        var column: Double { viewportWidth * fraction }
        var attachment: LayoutAttachment { LayoutAttachment(kind: .image, pixelWidth: pixelWidth, pixelHeight: pixelHeight) }
        func box() throws -> AttachmentBox { try metrics.attachmentBox(for: attachment, viewportWidth: viewportWidth) }

        var description: String {
            "BoxCase(\(pixelWidth) x \(pixelHeight) px, viewport \(viewportWidth), max height \(maxHeight), fraction \(fraction))"
        }
    }

    @Test func aPictureIsNeverScaledUp() async {
        await propertyCheck(count: 500, input: Self.box) { test in
            let box = try test.box()
            #expect(box.width <= Double(test.pixelWidth))
            #expect(box.height <= Double(test.pixelHeight))
            #expect(box.shape == .media)
        }
    }

    @Test func aPictureFitsTheColumnAndTheMaximumHeight() async {
        await propertyCheck(count: 500, input: Self.box) { test in
            let box = try test.box()
            #expect(box.width <= test.column)
            #expect(box.height <= test.maxHeight)
            #expect(box.width >= 0 && box.height >= 0)
        }
    }

    @Test func aPictureKeepsItsAspectRatioWithinRounding() async {
        await propertyCheck(count: 500, input: Self.box) { test in
            let box = try test.box()
            // box.width / box.height == w / h, cross-multiplied.
            let across = box.width * Double(test.pixelHeight)
            let down = box.height * Double(test.pixelWidth)
            #expect(abs(across - down) <= 1e-12 * max(across, down))
        }
    }

    @Test func aScaledPictureTouchesTheLimitThatScaledIt() async {
        await propertyCheck(count: 500, input: Self.box) { test in
            let box = try test.box()
            let fits = Double(test.pixelWidth) <= test.column && Double(test.pixelHeight) <= test.maxHeight
            if fits {
                #expect(box.width == Double(test.pixelWidth) && box.height == Double(test.pixelHeight))
            } else {
                // Scaled as much as needed and no more: one side at its bound.
                #expect(box.width == test.column || box.height == test.maxHeight)
            }
        }
    }

    static let attachment = zip(Gen.int(in: 0...2), sides, sides).map { kind, w, h in
        LayoutAttachment(kind: [.image, .video, .file][kind], pixelWidth: w, pixelHeight: h)
    }
    static let text = Gen.element(of: ["", "hi", "a few words here", "line\nbreak", String(repeating: "x", count: 90)])
        .compactMap { $0 }

    @Test func anotherAttachmentNeverMakesAMessageShorter() async {
        await propertyCheck(count: 300, input: Self.text, Self.attachment.array(of: 0...10), Self.attachment, points(0...1_200)) {
            text, attachments, extra, viewportWidth in
            let fewer = try metrics.estimate(text: text, attachments: attachments, viewportWidth: viewportWidth)
            let more = try metrics.estimate(text: text, attachments: attachments + [extra], viewportWidth: viewportWidth)
            // The one documented exception: an empty message without attachments is one empty line.
            if !(text.isEmpty && attachments.isEmpty) {
                #expect(more.height >= fewer.height)
            }
            #expect(more.attachmentBoxes == fewer.attachmentBoxes + [try metrics.attachmentBox(for: extra, viewportWidth: viewportWidth)])
            // The documented sum, exactly.
            let boxes = more.attachmentBoxes
            let sum = boxes.reduce(more.textHeight) { $0 + $1.height }
            #expect(more.height == sum + metrics.attachmentSpacing * Double(boxes.count - 1))
            #expect(more.textHeight == (text.isEmpty ? 0 : try metrics.estimatedHeight(of: text, viewportWidth: viewportWidth)))
        }
    }
}
