import Foundation

/// MIME types by file extension, for multipart file parts.
///
/// Foundation on Linux has no UTType database, so Conveyor carries its own table of the
/// common types (IANA registrations and the de-facto types browsers send).
public enum MIMEType {
    /// The MIME type for a file name or path's extension; `application/octet-stream` when unknown.
    /// - Parameter path: A file name, path or bare extension.
    /// - Returns: The MIME type.
    public static func forPath(_ path: String) -> String {
        let ext = (path as NSString).pathExtension.isEmpty ? path : (path as NSString).pathExtension
        return byExtension[ext.lowercased()] ?? "application/octet-stream"
    }

    /// The table: lower-case extension → MIME type.
    public static let byExtension: [String: String] = [
        // Text
        "txt": "text/plain", "text": "text/plain", "log": "text/plain", "md": "text/markdown", "markdown": "text/markdown",
        "csv": "text/csv", "tsv": "text/tab-separated-values", "html": "text/html", "htm": "text/html",
        "css": "text/css", "js": "text/javascript", "mjs": "text/javascript", "xml": "application/xml",
        "rtf": "application/rtf", "ics": "text/calendar", "vcf": "text/vcard", "yaml": "application/yaml",
        "yml": "application/yaml", "toml": "application/toml", "ini": "text/plain", "sql": "application/sql",
        "swift": "text/x-swift", "c": "text/x-c", "h": "text/x-c", "cpp": "text/x-c++", "py": "text/x-python",
        "sh": "application/x-sh", "srt": "application/x-subrip", "vtt": "text/vtt",
        // Data
        "json": "application/json", "geojson": "application/geo+json", "jsonld": "application/ld+json",
        "plist": "application/x-plist", "pdf": "application/pdf", "bin": "application/octet-stream",
        "wasm": "application/wasm", "xhtml": "application/xhtml+xml", "rss": "application/rss+xml",
        "atom": "application/atom+xml", "gpx": "application/gpx+xml", "kml": "application/vnd.google-earth.kml+xml",
        "proto": "application/x-protobuf", "sqlite": "application/vnd.sqlite3", "db": "application/octet-stream",
        // Images
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg", "gif": "image/gif",
        "webp": "image/webp", "bmp": "image/bmp", "tif": "image/tiff", "tiff": "image/tiff", "ico": "image/vnd.microsoft.icon",
        "svg": "image/svg+xml", "heic": "image/heic", "heif": "image/heif", "avif": "image/avif", "jxl": "image/jxl",
        "psd": "image/vnd.adobe.photoshop", "apng": "image/apng", "dng": "image/x-adobe-dng", "raw": "image/x-dcraw",
        // Audio
        "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "wav": "audio/wav", "ogg": "audio/ogg",
        "oga": "audio/ogg", "opus": "audio/opus", "flac": "audio/flac", "mid": "audio/midi", "midi": "audio/midi",
        "aif": "audio/aiff", "aiff": "audio/aiff", "caf": "audio/x-caf", "weba": "audio/webm", "amr": "audio/amr",
        // Video
        "mp4": "video/mp4", "m4v": "video/x-m4v", "mov": "video/quicktime", "webm": "video/webm", "mkv": "video/x-matroska",
        "avi": "video/x-msvideo", "wmv": "video/x-ms-wmv", "mpeg": "video/mpeg", "mpg": "video/mpeg", "ogv": "video/ogg",
        "3gp": "video/3gpp", "3g2": "video/3gpp2", "ts": "video/mp2t", "m3u8": "application/vnd.apple.mpegurl",
        "flv": "video/x-flv",
        // Archives
        "zip": "application/zip", "gz": "application/gzip", "tgz": "application/gzip", "tar": "application/x-tar",
        "bz2": "application/x-bzip2", "xz": "application/x-xz", "7z": "application/x-7z-compressed",
        "rar": "application/vnd.rar", "zst": "application/zstd", "jar": "application/java-archive",
        "deb": "application/vnd.debian.binary-package", "rpm": "application/x-rpm", "dmg": "application/x-apple-diskimage",
        "pkg": "application/octet-stream", "ipa": "application/octet-stream", "apk": "application/vnd.android.package-archive",
        // Documents
        "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint", "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "odt": "application/vnd.oasis.opendocument.text", "ods": "application/vnd.oasis.opendocument.spreadsheet",
        "odp": "application/vnd.oasis.opendocument.presentation", "pages": "application/vnd.apple.pages",
        "numbers": "application/vnd.apple.numbers", "key": "application/vnd.apple.keynote", "epub": "application/epub+zip",
        "eml": "message/rfc822", "msg": "application/vnd.ms-outlook",
        // Fonts
        "ttf": "font/ttf", "otf": "font/otf", "woff": "font/woff", "woff2": "font/woff2", "eot": "application/vnd.ms-fontobject",
        // Certificates and keys
        "pem": "application/x-pem-file", "crt": "application/x-x509-ca-cert", "cer": "application/pkix-cert",
        "der": "application/x-x509-ca-cert", "p12": "application/x-pkcs12", "pfx": "application/x-pkcs12",
        // 3D and misc
        "obj": "model/obj", "stl": "model/stl", "gltf": "model/gltf+json", "glb": "model/gltf-binary", "usdz": "model/vnd.usdz+zip",
    ]
}
