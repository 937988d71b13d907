import Foundation

/// VmRSS of a process, in KiB, from /proc (Linux); nil elsewhere or when the
/// process is gone.
public func residentMemoryKiB(of pid: Int32) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Int($0) }
    }
    return nil
}

/// Samples a process's resident memory until cancelled and returns the peak.
public func peakResidentMemoryKiB(of pid: Int32, every interval: Duration = .milliseconds(200)) async -> Int? {
    var peak: Int?
    while !Task.isCancelled {
        if let current = residentMemoryKiB(of: pid) { peak = max(peak ?? 0, current) }
        try? await Task.sleep(for: interval)
    }
    return peak
}
