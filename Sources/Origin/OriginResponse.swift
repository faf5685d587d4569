/// An origin's answer: status, header fields in order, the URL that answered (after redirects)
/// and the body, which streams as it arrives.
public struct OriginResponse: Sendable {
    public let status: Int
    /// Header fields as received, in order, repeated names kept.
    public let headers: [(name: String, value: String)]
    /// The URL of the last hop: the request's URL, or where redirects led.
    public let effectiveURL: String
    /// The body; empty for HEAD. Dropping it (and every iterator made from it) aborts the
    /// transfer if it still runs.
    public let body: OriginBody

    /// The first value of a header field, by case-insensitive name.
    public func header(_ name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// A list field's lines as one value (RFC 9110 5.3: `Cache-Control: max-age=60` and
    /// `Cache-Control: private` are `max-age=60, private`); nil when there is none.
    public func headerList(_ name: String) -> String? {
        HTTPList.joined(headers, name)
    }
}
