import Foundation

#if canImport(UIKit)
    import UIKit
#elseif canImport(AppKit)
    import AppKit
#endif

/// An image as bytes, with its format and pixel size read from the header.
///
/// Decoding pixels is the platform's business (`UIImage`/`NSImage` on Apple platforms, see
/// `platformImage`); Conveyor only needs to know what the bytes are and how large the image
/// is (the image cache's cost is width × height × 4), which the header tells without decoding.
///
/// Named for what it holds, and so that a file importing both Conveyor and SwiftUI can say
/// `Image` for SwiftUI's view without qualifying it (it was Conveyor's `Image` before 0.4).
public struct EncodedImage: Sendable, Equatable {
    /// Image formats Conveyor recognises from their first bytes.
    public enum Format: String, Sendable, CaseIterable {
        /// PNG.
        case png
        /// JPEG.
        case jpeg
        /// GIF (87a and 89a).
        case gif
        /// WebP (lossy, lossless and extended).
        case webp
        /// Windows bitmap.
        case bmp
        /// TIFF, either byte order.
        case tiff
        /// Windows icon.
        case ico

        /// The format's MIME type.
        public var mimeType: String {
            switch self {
            case .png: "image/png"
            case .jpeg: "image/jpeg"
            case .gif: "image/gif"
            case .webp: "image/webp"
            case .bmp: "image/bmp"
            case .tiff: "image/tiff"
            case .ico: "image/vnd.microsoft.icon"
            }
        }

        /// The format a MIME type names, including common aliases (`image/jpg`, `image/x-icon`).
        /// - Parameter mimeType: The MIME type.
        /// - Returns: The format, or nil for other types.
        public init?(mimeType: String) {
            switch mimeType.lowercased() {
            case "image/png", "image/apng": self = .png
            case "image/jpeg", "image/jpg", "image/pjpeg": self = .jpeg
            case "image/gif": self = .gif
            case "image/webp": self = .webp
            case "image/bmp", "image/x-bmp", "image/x-ms-bmp", "image/x-windows-bmp": self = .bmp
            case "image/tiff", "image/tif": self = .tiff
            case "image/vnd.microsoft.icon", "image/x-icon", "image/ico": self = .ico
            default: return nil
            }
        }
    }

    /// The encoded bytes.
    public let data: Data
    /// The format, from the bytes.
    public let format: Format
    /// Width in pixels, from the header.
    public let pixelWidth: Int
    /// Height in pixels, from the header.
    public let pixelHeight: Int

    /// Recognises `data` as an image.
    /// - Parameter data: The encoded bytes.
    /// - Throws: ``ResponseSerializationError/notAnImage(claimed:detected:)`` when the bytes are
    ///   not a recognised format or the header is truncated.
    public init(data: Data) throws {
        guard let info = ImageHeader.read(data) else {
            throw ResponseSerializationError.notAnImage(claimed: nil, detected: ImageHeader.format(of: data)?.rawValue)
        }
        self.data = data
        self.format = info.format
        self.pixelWidth = info.width
        self.pixelHeight = info.height
    }

    /// Bytes a decoded copy occupies at 4 bytes per pixel: the image cache's cost.
    public var decodedByteCount: Int { pixelWidth * pixelHeight * 4 }

    #if canImport(UIKit)
        /// A `UIImage` decoded from the bytes (each call decodes anew).
        public var platformImage: UIImage? { UIImage(data: data) }
    #elseif canImport(AppKit)
        /// An `NSImage` decoded from the bytes (each call decodes anew).
        public var platformImage: NSImage? { NSImage(data: data) }
    #endif
}
