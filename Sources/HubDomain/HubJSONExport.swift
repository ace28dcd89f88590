// The domain speaks JSON through HubJSON (JSONValue, its parser, the strict object reader); it is
// re-exported so every `import HubDomain` sees it without a second import.
@_exported import HubJSON
