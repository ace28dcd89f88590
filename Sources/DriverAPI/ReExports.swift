// Drivers read and write JSON (settings, device payloads) with HubJSON's `JSONValue` and
// `JSONObjectReader`, and report readings as a `Quantity`; both modules are re-exported so a
// driver still imports `DriverAPI` only.
@_exported import HubJSON
@_exported import Quantities
