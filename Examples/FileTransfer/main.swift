import Conveyor
import ConveyorTesting
import Foundation

// file-transfer-example: upload a directory's files as one multipart request, then download
// them back, resuming after an interruption.
//
//   swift run FileTransferExample                       # generated files, embedded file service
//   swift run FileTransferExample --directory DIR --base-url URL

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print(
        """
        USAGE: FileTransferExample [--directory DIR] [--base-url URL]

        Uploads the files of DIR (default: three generated ones) as one multipart request,
        downloads them back through a dropped connection (resuming with Range), and compares.
        Without --base-url it runs against an embedded file service. A server given with
        --base-url needs the service's two routes:
          POST /upload          a multipart form of files; answers a JSON list of the stored names
          GET  /files/{name}    each file back, with Range support
        """)
    exit(0)
}

func value(after flag: String) -> String? {
    guard let index = CommandLine.arguments.firstIndex(of: flag), index + 1 < CommandLine.arguments.count else { return nil }
    return CommandLine.arguments[index + 1]
}

let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("conveyor-file-transfer-\(UUID().uuidString)")
defer { try? FileManager.default.removeItem(at: workspace) }
let sourceDirectory: URL
if let directory = value(after: "--directory") {
    sourceDirectory = URL(fileURLWithPath: directory)
} else {
    sourceDirectory = workspace.appendingPathComponent("outbox")
    try FileManager.default.createDirectory(at: sourceDirectory, withIntermediateDirectories: true)
    let files = [("notes.txt", 20_000), ("photo.raw", 300_000), ("archive.bin", 1_500_000)]
    let total = Double(files.reduce(0) { $0 + $1.1 }) / 1_000_000
    print("making \(files.count) files (\(String(format: "%.1f", total)) MB of random bytes) in \(sourceDirectory.path)")
    // One system random number seeds the run; the bytes come from a fast generator.
    var seed = UInt64.random(in: .min ... .max)
    for (name, size) in files {
        seed &+= 1
        try GeneratedFiles.randomBytes(count: size, seed: seed).write(to: sourceDirectory.appendingPathComponent(name))
    }
}

var service: LocalHTTPServer?
let baseURL: URL
if let given = value(after: "--base-url").flatMap(URL.init(string:)) {
    baseURL = given
} else {
    let started = try FileService.start()
    service = started
    baseURL = started.baseURL
}
defer { service?.stop() }

let client = FileTransferClient(baseURL: baseURL)
do {
    let stored = try await client.upload(directory: sourceDirectory) { _, _ in }
    print("upload: one multipart request, streamed from disk")
    print("uploaded \(stored.count) files: \(stored.map { "\($0.name) (\($0.size) B)" }.joined(separator: ", "))")
    let inbox = workspace.appendingPathComponent("inbox")
    var mismatches = 0
    for file in stored {
        let (downloaded, attempts) = try await client.download(file.name, into: inbox)
        let same = try Data(contentsOf: downloaded) == Data(contentsOf: sourceDirectory.appendingPathComponent(file.name))
        if !same { mismatches += 1 }
        print("downloaded \(file.name): \(same ? "identical" : "DIFFERENT") after \(attempts) attempt\(attempts == 1 ? "" : "s")")
    }
    guard mismatches == 0 else {
        print("failed: \(mismatches) files differ")
        exit(1)
    }
    print("all files round-tripped")
} catch let error as ConveyorError where error.statusCode == 404 || error.statusCode == 405 {
    // The usual mistake: a --base-url server without the file service's routes.
    print("failed: \(error)")
    print("the server at \(baseURL.absoluteString) needs POST /upload and GET /files/{name} (see --help)")
    exit(1)
} catch {
    print("failed: \(error)")
    exit(1)
}
