/// What a failing test prints of a captured log or a child's output: its line count and at
/// most ten lines, not the whole text (issue 53: one failure printed a log of 7,554 lines, and
/// a failing run's output should stay in the tens of lines a reader can take in).
public enum Excerpt {
    /// The most lines an excerpt shows.
    public static let maximumLines = 10
    /// The most characters shown of one line.
    public static let maximumLineLength = 300

    /// `text`'s line count and the lines a reader needs: those containing one of `needles`
    /// (at most ten), or, when none does, the first five and the last five (a program's output
    /// begins with what it set out to do and ends with what went wrong).
    public static func of(_ text: String, showing needles: [String] = []) -> String {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let hits = lines.filter { line in needles.contains { line.contains($0) } }
        let chosen: [Substring]
        let what: String
        if !hits.isEmpty {
            chosen = Array(hits.prefix(maximumLines))
            what = "those showing \(needles.joined(separator: " or "))"
        } else if lines.count <= maximumLines {
            chosen = lines
            what = "all of them"
        } else {
            let half = maximumLines / 2
            chosen = Array(lines.prefix(half)) + ["…"] + Array(lines.suffix(half))
            what = "the first and last \(half)"
        }
        let shown = chosen.map { $0.count > maximumLineLength ? $0.prefix(maximumLineLength) + "…" : $0 }
        return "\(lines.count) lines captured; \(what):\n" + shown.joined(separator: "\n")
    }
}
