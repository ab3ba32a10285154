import Foundation

/// Small real images for tests: 3 x 2 pixels each (the icon: 16 x 16 and 32 x 32 entries),
/// generated once with an image library and kept as bytes. Served by LocalHTTPServer at
/// `/image/{png,jpeg,gif,webp,bmp,tiff,ico}`.
public enum SampleImages {
    /// A png sample.
    public static let png = Data(
        base64Encoded:
            "iVBORw0KGgoAAAANSUhEUgAAAAMAAAACCAIAAAASFvFNAAAAFUlEQVR4nGM8IafBwMDAwMDAxAADABPYARJY7Kp/AAAAAElF" + "TkSuQmCC"
    )!

    /// A jpeg sample.
    public static let jpeg = Data(
        base64Encoded:
            "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcp"
            + "LDAxNDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIy"
            + "MjIyMjIyMjIyMjIyMjL/wAARCAACAAMDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAA"
            + "AgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6"
            + "Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXG"
            + "x8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREA"
            + "AgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5"
            + "OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPE"
            + "xcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDkaKKK8o/Sz//Z"
    )!

    /// A gif sample.
    public static let gif = Data(
        base64Encoded:
            "R0lGODdhAwACAIEAAMgeKAAAAAAAAAAAACwAAAAAAwACAAAIBgABCBwYEAA7"
    )!

    /// A webp sample.
    public static let webp = Data(
        base64Encoded:
            "UklGRh4AAABXRUJQVlA4TBEAAAAvAkAAAAdQjyIXpf+BiOh/AAA="
    )!

    /// A webpLossy sample.
    public static let webpLossy = Data(
        base64Encoded:
            "UklGRjoAAABXRUJQVlA4IC4AAACQAQCdASoDAAIAAUAmJaACdLoAA5gA/vFNr+LaR0KZD/7xn/9xn/9xn/yIAAAA"
    )!

    /// A bmp sample.
    public static let bmp = Data(
        base64Encoded:
            "Qk1OAAAAAAAAADYAAAAoAAAAAwAAAAIAAAABABgAAAAAABgAAADEDgAAxA4AAAAAAAAAAAAAKB7IKB7IKB7IAAAAKB7IKB7I" + "KB7IAAAA"
    )!

    /// A tiff sample.
    public static let tiff = Data(
        base64Encoded:
            "SUkqAAgAAAAKAAABBAABAAAAAwAAAAEBBAABAAAAAgAAAAIBAwADAAAAhgAAAAMBAwABAAAAAQAAAAYBAwABAAAAAgAAABEB"
            + "BAABAAAAjAAAABUBAwABAAAAAwAAABYBBAABAAAAAgAAABcBBAABAAAAEgAAABwBAwABAAAAAQAAAAAAAAAIAAgACADIHijI" + "HijIHijIHijIHijIHig="
    )!

    /// A ico sample.
    public static let ico = Data(
        base64Encoded:
            "AAABAAIAEBAAAAAAIABSAAAAJgAAACAgAAAAACAAYgAAAHgAAACJUE5HDQoaCgAAAA1JSERSAAAAEAAAABAIAgAAAJCRaDYA"
            + "AAAZSURBVHicY2RkYmYgBTCRpHpUw6iGIaUBAEZiACbwqR2xAAAAAElFTkSuQmCCiVBORw0KGgoAAAANSUhEUgAAACAAAAAg"
            + "CAIAAAD8GO2jAAAAKUlEQVR4nO3NMQEAAAjDMAb+PWMCvlRAk/TUZ/16BwAAAAAAAAAAAIct2OEARiJ/pmcAAAAASUVORK5C" + "YII="
    )!

    /// The sample for a format name used in `/image/{name}`.
    /// - Parameter name: `png`, `jpeg`, `gif`, `webp`, `webp-lossy`, `bmp`, `tiff` or `ico`.
    /// - Returns: The bytes and MIME type, or nil.
    public static func named(_ name: String) -> (data: Data, mimeType: String)? {
        switch name {
        case "png": (png, "image/png")
        case "jpeg", "jpg": (jpeg, "image/jpeg")
        case "gif": (gif, "image/gif")
        case "webp": (webp, "image/webp")
        case "webp-lossy": (webpLossy, "image/webp")
        case "bmp": (bmp, "image/bmp")
        case "tiff": (tiff, "image/tiff")
        case "ico": (ico, "image/vnd.microsoft.icon")
        default: nil
        }
    }
}
