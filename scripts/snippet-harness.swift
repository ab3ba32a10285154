// Declarations the README's and the DocC articles' snippets assume, so each can be type-checked
// as written (scripts/check-snippets). Only names; nothing here runs. A section is left out of a
// snippet that declares the same name itself.
import Conveyor

// MARK: client
let client = HTTPClient(baseURL: URL(string: "http://127.0.0.1:8080/")!)
// MARK: api
let api = HTTPClient(baseURL: URL(string: "http://127.0.0.1:8080/")!)
// MARK: configuration
nonisolated(unsafe) var configuration = HTTPClient.Configuration.default
// MARK: base
let base = URL(string: "http://127.0.0.1:8080/")!
// MARK: url
let url = URL(string: "http://127.0.0.1:8080/get")!
// MARK: request
let request = URLRequest(url: URL(string: "http://127.0.0.1:8080/get")!)
// MARK: requests
let requests = [URLRequest(url: URL(string: "http://127.0.0.1:8080/get")!)]
// MARK: photoURL
let photoURL = URL(fileURLWithPath: "/tmp/photo.jpg")
// MARK: archiveURL
let archiveURL = URL(fileURLWithPath: "/tmp/backup.tar.gz")
// MARK: downloads
let downloads = URL(fileURLWithPath: "/tmp/downloads")
// MARK: logURL
let logURL = URL(fileURLWithPath: "/tmp/conveyor.log")
// MARK: path
let path = "/tmp/download.bin"
// MARK: avatarURL
let avatarURL = URL(string: "http://127.0.0.1:8080/image/png")!
// MARK: placeholder
let placeholder: EncodedImage? = nil
// MARK: token
let token = "token"
// MARK: query
let query = "swift"
// MARK: User
struct User: Codable, Sendable {
    let id: Int
    let login: String
    let name: String
}
// MARK: NewUser
struct NewUser: Codable, Sendable {
    let name: String
}
// MARK: newUser
let newUser = NewUser(name: "Ada")
// MARK: changes
let changes = NewUser(name: "Ada")
// MARK: APIClient
final class APIClient: HTTPClient, @unchecked Sendable {
    static let shared = APIClient(baseURL: URL(string: "http://127.0.0.1:8080/")!)
}
// MARK: MyAPIClient
final class MyAPIClient: HTTPClient, @unchecked Sendable {
    func user(_ id: Int) async throws -> User { try await get("users/\(id)", as: User.self) }
}
// MARK: Spinner
final class Spinner: @unchecked Sendable {
    var isHidden = true
}
// MARK: spinner
let spinner = Spinner()
// MARK: AvatarView
final class AvatarView: ImageDisplaying, @unchecked Sendable {
    var image: EncodedImage?
}
// MARK: avatarView
var avatarView: AvatarView { AvatarView() }  // computed: the snippet may declare a non-Sendable AvatarView
// MARK: avatar
var avatar: AvatarView { AvatarView() }
// MARK: Keychain
enum Keychain {
    static let savedCredential: BearerTokenAuthenticator.Credential? = nil
    static func save(_ credential: BearerTokenAuthenticator.Credential) {}
}
// MARK: show
func show(_ value: Any?) {}
// MARK: backupPin
let backupPin = "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB="
// MARK: showOnline
func showOnline() {}
// MARK: showOffline
func showOffline() {}
// MARK: process
func process(_ line: String) throws {}
