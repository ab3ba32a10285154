import Foundation
import Synchronization

/// `[#######.....]  42%  8.4/20.0 MB  31.0 MB/s`: redrawn in place on a terminal, printed every 25 % when
/// standard output is not one (logs, CI).
final class ProgressBar: Sendable {
    private let label: String
    private let interactive = isatty(STDOUT_FILENO) == 1
    private let lastQuarter = Mutex(-1)
    private let start = ContinuousClock.now

    init(label: String) { self.label = label }

    func update(_ done: Int64, _ total: Int64) {
        let fraction = total > 0 ? min(1, Double(done) / Double(total)) : 0
        let line =
            "  \(label) [\(String(repeating: "#", count: Int(fraction * 20)))\(String(repeating: ".", count: 20 - Int(fraction * 20)))] "
            + String(
                format: "%3d%%  %.1f/%.1f MB  %.1f MB/s", Int(fraction * 100), Double(done) / 1e6, Double(max(total, done)) / 1e6,
                Double(done) / 1e6 / max(0.001, (ContinuousClock.now - start) / .seconds(1)))
        if interactive {
            FileHandle.standardOutput.write(Data(("\r" + line).utf8))
        } else {
            let quarter = Int(fraction * 4)
            if lastQuarter.withLock({ last in
                defer { last = max(last, quarter) }
                return quarter > last
            }) {
                print(line)
            }
        }
    }

    func finish() {
        if interactive { FileHandle.standardOutput.write(Data("\n".utf8)) }
    }
}
