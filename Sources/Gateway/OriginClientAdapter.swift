import Origin

/// The libcurl origin client as the gateway's `OriginFetching`, with the node's allow list.
public final class OriginClientAdapter: OriginFetching {
    public let client: OriginClient

    /// `allowOrigins` empty: any host whose address is public (SPEC section 5).
    /// `proxy`: the client of a gateway or tracker (its requests name it in `Via`), not of
    /// the command line's calls to a gateway's endpoints.
    public init(allowOrigins: [String], idleTimeout: Duration = .seconds(10), maxObjectSize: Int64 = 4 << 30, proxy: Bool = false) throws(SettingsError) {
        var configuration = OriginClient.Configuration()
        configuration.idleTimeout = idleTimeout
        configuration.maxBodySize = maxObjectSize
        // Per transfer, what the origin may send ahead of a slow player: with a thousand
        // players on one node this, not the object size, is what bounds memory.
        configuration.bodyBufferSize = 32 << 10
        if proxy { configuration.via = "1.1 " + GatewayResponder.pseudonym }
        if !allowOrigins.isEmpty {
            var entries: [AllowedOrigin] = []
            for entry in allowOrigins {
                guard let e = AllowedOrigin(entry) else { throw SettingsError("allow-origin: cannot read '\(entry)'") }
                entries.append(e)
            }
            configuration.addressPolicy = AddressPolicy(allowOrigins: entries)
        }
        client = OriginClient(configuration: configuration)
    }

    public func refusal(of url: String) -> String? { client.refusal(of: url) }

    public func fetch(_ request: OriginFetch) async throws(OriginFetchError) -> OriginAnswer {
        let r = OriginRequest(
            url: request.url, range: request.range.flatMap(Self.byteRange), timeouts: .init(idle: request.idleTimeout),
            maxBodySize: request.maxBodySize.map(Int64.init), longPoll: request.longPoll)
        let response: OriginResponse
        do {
            response = try await client.fetch(r)
        } catch {
            throw OriginFetchError(Self.kind(error), error.description)
        }
        let iterator = BodyIterator(response.body)
        let body = AsyncThrowingStream<[UInt8], any Error> { try await iterator.next() }
        return OriginAnswer(status: response.status, headers: response.headers, effectiveURL: response.effectiveURL, body: body)
    }

    static func kind(_ e: OriginError) -> OriginFetchError.Kind {
        switch e.httpStatusForGateway {
        case 403: return .forbidden
        case 504: return .timeout
        default: return e.code == .tooLarge ? .tooLarge : .failed
        }
    }

    /// One `bytes=` range as the client sends it; several ranges are not forwarded (the
    /// gateway then answers with the whole object, as RFC 9110 allows).
    static func byteRange(_ header: String) -> OriginRequest.ByteRange? {
        let h = header.trimmingASCIISpaces
        guard h.lowercased().hasPrefix("bytes="), !h.contains(",") else { return nil }
        let spec = h.dropFirst(6).trimmingASCIISpaces
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let a = Int64(spec[..<dash]), b = Int64(spec[spec.index(after: dash)...])
        switch (a, b) {
        case (let a?, let b?): return .closed(first: a, last: b)
        case (let a?, nil): return .from(first: a)
        case (nil, let b?): return .suffix(length: b)
        default: return nil
        }
    }
}

/// Reads an origin body chunk by chunk for an unfolding stream.
final class BodyIterator: @unchecked Sendable {
    // @unchecked: the unfolding stream calls `next()` serially, one call at a time.
    private var iterator: OriginBody.AsyncIterator
    init(_ body: OriginBody) { iterator = body.makeAsyncIterator() }
    func next() async throws -> [UInt8]? {
        do {
            return try await iterator.next()
        } catch {
            throw OriginFetchError(OriginClientAdapter.kind(error), error.description)
        }
    }
}
