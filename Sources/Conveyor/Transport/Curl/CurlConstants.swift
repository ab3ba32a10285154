#if os(Linux)
    /// The libcurl option numbers Conveyor uses (from curl.h, stable across libcurl 7.x and 8.x:
    /// libcurl never renumbers). Long options are plain numbers, object options 10000+, function
    /// options 20000+, `curl_off_t` options 30000+, blob options 40000+.
    enum CurlOption: Int32 {
        case url = 10002
        case readData = 10009
        case errorBuffer = 10010
        case writeFunction = 20011
        case readFunction = 20012
        case httpHeader = 10023
        case headerData = 10029
        case customRequest = 10036
        case verbose = 41
        case freshConnect = 74
        case noBody = 44
        case post = 47
        case sslVerifyPeer = 64
        case caInfo = 10065
        case headerFunction = 20079
        case httpGet = 80
        case sslVerifyHost = 81
        case httpVersion = 84
        case caPath = 10097
        case noSignal = 99
        case bufferSize = 98
        case uploadBufferSize = 280
        case acceptEncoding = 10102
        case httpContentDecoding = 158
        case writeData = 10001
        case httpAuth = 107
        case userName = 10173
        case password = 10174
        case postFieldSizeLarge = 30120
        case tcpNoDelay = 121
        case seekFunction = 20167
        case seekData = 10168
        case pinnedPublicKey = 10230
        case pathAsIs = 234
        case pipeWait = 237
        case caInfoBlob = 40309
        case suppressConnectHeaders = 265
        case maxSendSpeedLarge = 30145
        case sockoptFunction = 20148
        case sockoptData = 10149
        case resolverStartFunction = 20272
        case resolverStartData = 10273
        case prereqFunction = 20312
        case prereqData = 10313
        case unixSocketPath = 10231
        case resolve = 10203
        case proxy = 10004
        case proxyAuth = 111
        case proxyUserName = 10175
        case proxyPassword = 10176
        case noProxy = 10177
        case headerOpt = 229
        case proxyCAInfo = 10246
        case proxyCAPath = 10247
        case proxySSLVerifyPeer = 248
        case proxySSLVerifyHost = 249
        case proxyCAInfoBlob = 40310
    }

    /// The `curl_multi_setopt` options Conveyor uses.
    enum CurlMultiOption: Int32 {
        case pipelining = 3
        case maxHostConnections = 7
        case maxConnects = 6
    }

    /// The `curl_easy_getinfo` items Conveyor reads (type base + number, as curl.h defines them).
    enum CurlInfo: Int32 {
        case numConnects = 0x20001A
        case httpVersion = 0x20002E
        case primaryIP = 0x100020
        case totalTime = 0x600032
        case nameLookupTime = 0x600033
        case connectTime = 0x600034
        case startTransferTime = 0x600036
        case appConnectTime = 0x600038
        /// `CURLINFO_HTTP_CONNECTCODE`: the proxy's answer to `CONNECT`.
        case httpConnectCode = 0x200016
        /// `CURLINFO_PRIMARY_PORT`: the port of the last connection (the proxy's, through one).
        case primaryPort = 0x200028
    }

    /// Other values from curl.h.
    enum CurlConstant {
        static let globalAll = 3
        static let messageDone: Int32 = 1
        static let readAbort = 0x1000_0000
        /// `CURL_WRITEFUNC_PAUSE`: the write callback did not take the bytes; pause the transfer.
        static let writePause = 0x1000_0001
        /// `CURLPAUSE_CONT`.
        static let pauseContinue: Int32 = 0
        static let seekOK: Int32 = 0
        static let seekCantSeek: Int32 = 2
        static let httpVersion2TLS = 4
        static let pipeMultiplex = 2
        static let authDigest = 2
        static let authAnySafe = ~1  // every scheme but Basic
        static let errorBufferSize = 256
        static let blobCopy: UInt32 = 1
        /// `CURLAUTH_BASIC | CURLAUTH_DIGEST`: libcurl asks the proxy which it takes (one round
        /// trip) and answers with the configured credentials once.
        static let authBasicOrDigest = 3
        /// `CURLHEADER_SEPARATE`: the request's own headers never go into a `CONNECT`.
        static let headerSeparate = 1
    }

    /// The `CURLcode` results Conveyor tells apart.
    enum CurlCode: Int32 {
        case ok = 0
        case unsupportedProtocol = 1
        case urlMalformat = 3
        case couldntResolveProxy = 5
        case couldntResolveHost = 6
        case couldntConnect = 7
        case weirdServerReply = 8
        case http2 = 16
        case partialFile = 18
        case writeError = 23
        case readError = 26
        case outOfMemory = 27
        case operationTimedOut = 28
        case sslConnectError = 35
        case abortedByCallback = 42
        case gotNothing = 52
        case sendError = 55
        case recvError = 56
        case sslCertProblem = 58
        case peerFailedVerification = 60
        case badContentEncoding = 61
        case sendFailRewind = 65
        case sslCACertBadFile = 77
        case sslPinnedPublicKeyNotMatch = 90
        case http2Stream = 92
        case proxy = 97
    }
#endif
