import HubEngine
import Hummingbird

/// The context of every request the hub's HTTP listener serves: hummingbird's core storage plus
/// who is acting. Access control sets ``actor`` once it knows the credential; every command a
/// route hands to the ``CommandService`` is recorded with it (`http:<user or token name>`).
package struct HubRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// Recorded on the events of every command this request runs.
    var actor: String

    package init(source: Source) {
        coreContext = .init(source: source)
        actor = "http:local"
    }
}
