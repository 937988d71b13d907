import Foundation
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes
import ScrollbackModels

extension Duration {
    /// Whole seconds, or with a fraction when there is one (`0.5`).
    var seconds: String {
        let value = self / .seconds(1)
        return value == value.rounded() ? "\(Int(value))" : "\(value)"
    }
}
