import Foundation
import NIOCore
import ScrollbackModels
import ScrollbackStore

/// A frame encoded once, sent to any number of sockets.
struct ServerFrameBytes: Sendable {
    let buffer: ByteBuffer

    init(_ frame: ServerFrame) {
        buffer = ByteBuffer(bytes: frame.jsonBytes)
    }
}
