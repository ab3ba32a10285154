import ConveyorTestSupport
import Testing

/// A failing test prints an excerpt of a captured log, not the log (issue 53).
@Suite("Excerpt: what a failure prints of a captured log")
struct ExcerptTests {
    @Test("A long log: its line count and at most ten lines, those showing the needle first, each line cut")
    func longLog() {
        let lines = (1...7554).map { "line \($0)" + ($0 % 1000 == 0 ? " secret" : "") }
        let excerpt = Excerpt.of(lines.joined(separator: "\n"), showing: ["secret"])
        let printed = excerpt.split(separator: "\n")
        #expect(printed.first == "7554 lines captured; those showing secret:")
        #expect(
            printed.dropFirst() == [
                "line 1000 secret", "line 2000 secret", "line 3000 secret", "line 4000 secret",
                "line 5000 secret", "line 6000 secret", "line 7000 secret",
            ])
        let plain = Excerpt.of(lines.joined(separator: "\n")).split(separator: "\n")
        #expect(plain.count == 12 && plain[1] == "line 1" && plain[6] == "…" && plain[11] == "line 7554")
        let wide = Excerpt.of(String(repeating: "x", count: 1000)).split(separator: "\n")
        #expect(wide.count == 2 && wide[1].count == Excerpt.maximumLineLength + 1)
    }

    @Test("A short text is shown whole")
    func shortText() {
        #expect(Excerpt.of("a\nb") == "2 lines captured; all of them:\na\nb")
    }
}
