/// Everything one transfer needs, resolved from the request and the client's configuration.
struct TransferOptions: Sendable {
    var url: CurlURL
    var method: OriginRequest.Method
    var body: [UInt8]
    var range: OriginRequest.ByteRange?
    var headers: [(name: String, value: String)]
    var connectTimeout: Duration
    var idleTimeout: Duration
    var pausedLimit: Duration
    var totalTimeout: Duration?
    var maxBodySize: Int64?
    var bufferSize: Int
    var httpVersion: OriginClient.Configuration.HTTPVersion
    var userAgent: String
    var policy: AddressPolicy
    var caFile: String?

    init(_ request: OriginRequest, url: CurlURL, method: OriginRequest.Method, configuration c: OriginClient.Configuration) {
        self.url = url
        self.method = method
        self.body = request.body
        self.range = request.range
        self.headers = request.headers + (c.via.map { [(name: "Via", value: $0)] } ?? [])
        self.connectTimeout = request.timeouts.connect ?? c.connectTimeout
        self.idleTimeout = request.timeouts.idle ?? c.idleTimeout
        self.pausedLimit = c.pausedLimit
        self.totalTimeout = request.timeouts.total ?? c.totalTimeout
        self.maxBodySize = request.maxBodySize ?? c.maxBodySize
        self.bufferSize = max(1, c.bodyBufferSize)
        self.httpVersion = c.httpVersion
        self.userAgent = c.userAgent
        self.policy = c.addressPolicy
        self.caFile = c.caFile
    }
}
