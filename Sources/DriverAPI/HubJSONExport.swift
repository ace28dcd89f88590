// Drivers read and write JSON (settings, device payloads) with HubJSON's `JSONValue` and
// `JSONObjectReader`; it is re-exported so a driver still imports `DriverAPI` only.
@_exported import HubJSON
