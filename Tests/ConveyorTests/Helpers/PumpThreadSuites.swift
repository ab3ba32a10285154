import Testing

/// The suites whose uploads go through the body pump, run one at a time (`.serialized` reaches
/// every suite nested here): ``BodyStreamPumpTests`` counts the pump's threads (`conveyor-pump`),
/// and a count taken while another suite's pumped upload runs includes that upload's thread (a
/// full run failed this way once its neighbours began to pump).
@Suite("Suites that send bodies through the pump", .serialized)
enum PumpThreadSuites {}
