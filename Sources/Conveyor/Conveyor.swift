@_exported import Foundation

// Re-export the networking half of Foundation where it lives in its own module (Linux), so a
// user's `import Conveyor` is enough to name URLRequest, HTTPURLResponse and URLSession.
#if canImport(FoundationNetworking)
    @_exported import FoundationNetworking
#endif

/// Facts about the Conveyor library itself.
///
/// Not named `Conveyor`: a type with the module's name would shadow the module, and
/// `Conveyor.HTTPHeaders` would stop resolving in users' code.
public enum ConveyorLibrary {
    /// The library's semantic version, sent in the default `User-Agent` header.
    public static let version = "0.3.0"
}
