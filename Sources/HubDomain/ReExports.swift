// The domain speaks JSON through HubJSON (JSONValue, its parser, the strict object reader) and
// measures with Quantities' `Quantity`; both are re-exported so every `import HubDomain` sees them
// without a second import.
@_exported import HubJSON
@_exported import Quantities
