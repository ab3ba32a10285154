import Testing

extension TimeLimitTrait.Duration {
    /// The time limit of a suite whose limit only turns a hang into a failure, never a verdict
    /// on speed: 5 minutes. In a full parallel run on a quiet two-core machine some of these
    /// tests take 30-40 s (waiting for threads the other suites hold), and beside other builds
    /// (load average 10-20) a limit of 1 minute failed tests that were only slow (issue 53).
    static var notAHang: Self { .minutes(5) }
}
