import HubDomain

/// The one answer to a request, whatever carried it: the JSON body every surface sends
/// (``AnswerJSON``: the MQTT response's payload, the HTTP API's body) and, when it was refused,
/// the kind of refusal, from which each surface derives its own status.
public struct Answer: Sendable, Equatable {
    /// `{"status":"ok","data":...}` or `{"status":"error","error":...,"code":...}`, with the echo.
    public var body: JSONValue
    /// Nil when the request succeeded.
    public var refusal: RejectionKind?

    /// An answer with its body; `refusal` nil when the request succeeded.
    public init(body: JSONValue, refusal: RejectionKind?) {
        self.body = body
        self.refusal = refusal
    }

    /// Succeeded, with `data`.
    public static func ok(_ data: JSONValue = .null, echo: RequestParser.Echo = RequestParser.Echo()) -> Answer {
        Answer(body: AnswerJSON.ok(data, echo: echo), refusal: nil)
    }

    /// Refused: why (one sentence), the stable code (nil for a malformed request), and its kind.
    public static func refused(
        _ message: String, code: String?, kind: RejectionKind,
        echo: RequestParser.Echo = RequestParser.Echo()
    ) -> Answer {
        Answer(body: AnswerJSON.error(message, code: code, echo: echo), refusal: kind)
    }

    /// A request that could not be parsed, or asked for what cannot be answered.
    public static func refused(_ error: RequestError) -> Answer {
        refused(error.message, code: error.code, kind: error.kind, echo: error.echo)
    }

    /// A command the hub refused or could not carry out.
    public static func refused(_ rejection: Rejection, echo: RequestParser.Echo = RequestParser.Echo()) -> Answer {
        refused(rejection.message, code: rejection.code, kind: rejection.kind, echo: echo)
    }

    /// The refusal's code, when it has one.
    public var code: String? {
        if case .string(let code)? = body["code"] { return code }
        return nil
    }
}
