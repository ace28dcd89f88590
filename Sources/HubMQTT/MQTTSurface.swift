import DriverAPI
import Foundation
import HubDomain
import HubEngine
import HubLog
import Logging
import MQTT
import Synchronization

/// The hub's MQTT topic surface: commands in (answered on the response topics), retained state
/// and Home Assistant discovery out, and every logged event on `<base>/events/<stream>/<type>`.
///
/// The command path (route, parse, lane, `CommandService`, answer) never enters this actor: under
/// load, thousands of messages a second must not queue behind each other for it. The actor keeps
/// only what the state and discovery publishers remember.
public actor MQTTSurface {
    nonisolated let hub: Hub
    nonisolated let commands: CommandService
    nonisolated let drivers: DriverHost
    nonisolated let relay: MQTTRelay?
    /// Live beacon presence for the animals' state.
    nonisolated let bridges: BridgeHost
    /// Answers requests and runs commands (the same for MQTT and HTTP).
    package nonisolated let requests: Requests
    /// The broker connection the surface publishes and subscribes through.
    public nonisolated let client: MQTTClient
    /// The topics it serves.
    public nonisolated let topics: MQTTTopics
    let discovery: HomeAssistantDiscovery
    nonisolated let events: MQTTEventsPublisher
    nonisolated let logger: Logger
    /// Device id -> the name and sensors its discovery configs were published with (re-announced
    /// on a rename, or when the sensors offered change).
    var announcedDevices: [String: (name: String, sensors: OfferedSensors)] = [:]
    /// Devices whose driver leaves Home Assistant to another bridge (`DriverCapabilities.announcesToHomeAssistant`
    /// false: a Zigbee2MQTT plug) and whose configs were cleared since the last (re)connect.
    var withheldDevices: Set<String> = []
    /// Device id -> the driver and settings its Home Assistant policy was read for, and the policy.
    var homeAssistantPolicy: [String: (driver: String, config: String, announces: Bool)] = [:]
    var announcedAnimals: Set<String> = []
    /// Scenes announced to Home Assistant.
    var announcedScenes: Set<String> = []
    /// Streams whose state must be re-published; filled from any task, drained by `publishStates`.
    private nonisolated let dirty = Mutex<Set<StreamKey>>([])
    nonisolated let wake: AsyncStream<Void>.Continuation
    let wakes: AsyncStream<Void>
    /// Home Assistant announced itself: everything is re-announced (by the state publisher).
    nonisolated let announceRequest: AsyncStream<Void>.Continuation
    let announceRequests: AsyncStream<Void>
    var wasDisconnected = false
    /// When the current connection was made (nil while disconnected).
    var connectedAt: ContinuousClock.Instant?
    /// Connections in a row that the broker dropped within ``briefConnection`` of accepting them.
    var briefDrops = 0
    /// A connection dropped sooner than this after CONNACK counts as brief (a session taken over,
    /// a broker dropping the hub after a refused publish).
    static let briefConnection: Duration = .seconds(5)
    /// Commands are handled in lanes keyed by the device or animal they are about: one entity's
    /// commands in arrival order, many entities at once.
    static let laneCount = 32
    /// Commands one lane holds at most (`mqtt_command_lane`): a command that finds its lane full is
    /// answered `hub_busy` (retryable: nothing was carried out) and counted in
    /// `hub_queue_overflow_total{queue="mqtt_command_lane"}`; none is dropped unanswered.
    package static let laneCapacity = 1024
    /// Counters for the operator.
    private nonisolated let ignoredRetainedCount = Counter()
    /// Retained messages ignored on command topics since start (a retained command is never run).
    public nonisolated var ignoredRetained: Int { ignoredRetainedCount.value }
    private nonisolated let answeredCount = Counter()
    /// Answers handed to the broker connection since start (one per command message).
    public nonisolated var answered: Int { answeredCount.value }
    private nonisolated let unansweredCount = Counter()
    /// Command messages neither run nor answered because this hub's lease was not confirmed (it was
    /// paused or cut off: the active hub answers the client's re-send).
    public nonisolated var unanswered: Int { unansweredCount.value }
    /// Said once per lapse of the lease: commands go unanswered.
    private nonisolated let saidUnanswered = Atomic<Bool>(false)
    /// The QoS 1 window: commands received (and so acknowledged to the broker) but not yet durable.
    public nonisolated let commandWindow = CommandWindow()
    /// Retained messages published again after every (re)connect, beside `online` (`<base>/status/active`).
    private nonisolated let retainedOnConnect = Mutex<[(topic: String, payload: [UInt8])]>([])
    /// False once this hub stepped down (hot standby): it no longer defends `<base>/status`, and it
    /// leaves its command subscriptions before disconnecting.
    private nonisolated let speaksForHub = Atomic<Bool>(true)
    /// Whether leaving publishes `offline` on `<base>/status`: true, unless this hub stepped down
    /// because another instance is active (whose `online` it must not override).
    private nonisolated let saysOfflineOnLeaving = Atomic<Bool>(true)
    /// Set when the surface starts to disconnect: from then on `<base>/status` is not defended.
    private nonisolated let leaving = Atomic<Bool>(false)
    /// With a hot standby: whether this instance's lease is still known to be held. A surface that
    /// (re)connects while it is not announces nothing until ``LeaseKeeper`` renews the lease.
    nonisolated let lease: LeaseStanding?
    /// A (re)connect found the lease unconfirmed and announced nothing.
    private nonisolated let skippedAnnouncement = Atomic<Bool>(false)

    init(
        hub: Hub, commands: CommandService, drivers: DriverHost, bridges: BridgeHost, relay: MQTTRelay?, client: MQTTClient,
        topics: MQTTTopics, checkpointPath: String, lease: LeaseStanding? = nil, attributionClient: String? = nil, logger: Logger
    ) {
        self.hub = hub
        self.lease = lease
        self.commands = commands
        self.drivers = drivers
        self.bridges = bridges
        self.requests = Requests(hub: hub, commands: commands, drivers: drivers, bridges: bridges)
        self.relay = relay
        self.client = client
        self.topics = topics
        self.discovery = HomeAssistantDiscovery(topics: topics, attributionClient: attributionClient)
        events = MQTTEventsPublisher(hub: hub, client: client, topics: topics, checkpointPath: checkpointPath, logger: logger)
        self.logger = logger
        (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        (announceRequests, announceRequest) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Connects (waiting a few seconds; a broker that is down is retried in the background, bad
    /// credentials or TLS failures are errors). Nothing is served until the surface's services run
    /// (`connection`, `eventFeed`, `statePublisher`, `commandDispatch`); messages that arrive
    /// before then wait in the client's queue.
    public static func connect(
        hub: Hub, commands: CommandService, drivers: DriverHost, bridges: BridgeHost, relay: MQTTRelay? = nil,
        settings: MQTTSettings, checkpointPath: String, lease: LeaseStanding? = nil,
        keepSession: Bool = false, logger: Logger
    ) async throws -> MQTTSurface {
        let topics = MQTTTopics(base: settings.baseTopic, discoveryPrefix: settings.discoveryPrefix)
        var options = MQTTOptions(clientId: settings.clientId)
        options.host = settings.host
        options.port = settings.port
        options.username = settings.username
        options.password = settings.password
        options.keepAlive = settings.keepAlive
        options.cleanSession = false
        options.retainAsPublished = true  // tell retained commands apart even while subscribed
        if let ca = settings.caFile {
            options.tls = MQTTOptions.TLSOptions(
                caFile: ca, certFile: settings.certFile, keyFile: settings.keyFile, insecure: settings.tlsInsecure)
        }
        options.will = MQTTOptions.Will(topic: topics.status, payload: Array("offline".utf8), qos: 1, retain: true)
        // A hot standby's session may hold commands another instance answered; the only writer's (a
        // lease under a derived name, `keepSession`) holds those sent while it restarted.
        if lease != nil && !keepSession { await discardSession(options, logger: logger) }
        let client = try MQTTClient(options: options)
        let surface = MQTTSurface(
            hub: hub, commands: commands, drivers: drivers, bridges: bridges, relay: relay, client: client,
            topics: topics, checkpointPath: checkpointPath, lease: lease, attributionClient: settings.attributionClient, logger: logger)
        // A hot standby's active speaks only while its lease is confirmed, on the monotonic clock, at
        // the moment of each publish (answers, retained state, readings, the audit head, discovery,
        // the MQTT-native devices' commands): resumed after a pause past its lease, it says nothing.
        // The log's only writer (a derived name) has no other instance to contradict.
        if let lease, !lease.soleWriter {
            client.setPublishGate { [weak surface] in surface?.maySpeak ?? false }
        }
        relay?.attach(client, reserved: [topics.base, topics.discoveryPrefix])
        for filter in topics.subscriptions { try client.subscribe(filter, qos: 1) }
        try client.subscribe(topics.status, qos: 1)  // a former connection's late last will is answered (`defendStatus`)
        try client.start()
        do {
            try await client.waitUntilConnected(timeout: .seconds(5))
            logger.info("mqtt: connected to \(settings.host):\(settings.port) as \(settings.clientId), base topic \(topics.base)")
        } catch let error as MQTTError where error.kind == .unreachable || error.kind == .timeout {
            logger.warning("mqtt: \(error); retrying in the background")
        } catch {
            // Refused credentials, TLS or protocol errors do not heal by retrying.
            await client.stop(finalMessage: nil)
            throw HubError.failed("mqtt: \(error)")
        }
        return surface
    }

    /// An instance of a hot standby becoming active: what waits in its session at the broker (kept
    /// for its client id since it was last active, killed or stepped down) was sent for another
    /// active, and is not run now. A clean-session connect with the same id discards it; the hub
    /// then connects with a persistent session as always. A broker it cannot reach is left to the
    /// real connection to report.
    static func discardSession(_ options: MQTTOptions, logger: Logger) async {
        var clean = options
        clean.cleanSession = true
        clean.will = nil
        do {
            let cleaner = try MQTTClient(options: clean)
            try cleaner.start()
            do { try await cleaner.waitUntilConnected(timeout: .seconds(5)) } catch {
                logger.warning("mqtt: could not discard this instance's old session", metadata: ["error": "\(error)"])
            }
            await cleaner.stop(finalMessage: nil)
        } catch {
            logger.warning("mqtt: could not discard this instance's old session", metadata: ["error": "\(error)"])
        }
    }

    /// Publishes `offline` (unless this hub stepped down for another active) and disconnects. A hub
    /// that stepped down first unsubscribes from the command topics: its session at the broker (kept
    /// for its client id) must not collect the commands the new active answers, to run them again
    /// when this instance is active next.
    func disconnect() async {
        leaving.store(true, ordering: .relaxed)
        wake.finish()
        announceRequest.finish()
        if !speaksForHub.load(ordering: .relaxed) {
            for filter in topics.subscriptions + [topics.status] {
                do { try client.unsubscribe(filter) } catch {
                    logger.warning(
                        "mqtt: could not unsubscribe while stepping down", metadata: ["filter": "\(filter)", "error": "\(error)"])
                }
            }
        }
        let offline = saysOfflineOnLeaving.load(ordering: .relaxed)
        if client.withheldPublishes > 0 {
            logger.notice("mqtt: \(client.withheldPublishes) publish(es) held back while this instance's lease was not confirmed")
        }
        await client.stop(finalMessage: offline ? (topic: topics.status, payload: Array("offline".utf8), retain: true) : nil)
    }

    /// Publishes `payload` retained on `topic` after every (re)connect, from the next one on.
    package nonisolated func keepRetained(_ topic: String, _ payload: [UInt8]) {
        retainedOnConnect.withLock { $0.append((topic, payload)) }
    }

    /// This hub is no longer the active one. With `anotherIsActive` it leaves without saying
    /// `offline` (a clean disconnect sends no last will either): `<base>/status` speaks for the
    /// instance that holds the lease now. Otherwise (the database is unreachable, the lease lapsed
    /// with no holder) no instance is active at this moment, and it says `offline`; the next
    /// active says `online`, and defends it against this late `offline` if the two cross.
    package nonisolated func stepDown(anotherIsActive: Bool) {
        let first = speaksForHub.exchange(false, ordering: .relaxed)
        if anotherIsActive { saysOfflineOnLeaving.store(false, ordering: .relaxed) }
        // Said at once, not when the services have stopped (the last head, the feed's checkpoint,
        // and what else waits for a database that may be gone come first).
        if first, !anotherIsActive {
            do { try client.publishPastGate(topics.status, Array("offline".utf8), retain: true) } catch {
                logger.warning("mqtt: could not say offline while stepping down", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Whether this hub may publish now: it has not stepped down, and (with a hot standby) its lease
    /// is confirmed (``LeaseStanding/mayAct``). The client's publish gate asks it.
    nonisolated var maySpeak: Bool {
        speaksForHub.load(ordering: .relaxed) && (lease.map { $0.soleWriter || $0.mayAct } ?? true)
    }

    /// Publishes the client's gate held back since start (``maySpeak`` false).
    public nonisolated var withheld: UInt64 { client.withheldPublishes }

    // MARK: Connection

    /// Follows the connection: `online` and everything retained again after each (re)connect.
    /// Throws when the connection is dead for good (credentials revoked, TLS broken): the hub
    /// stops rather than running without its surface.
    func followConnection() async throws {
        for await event in client.connectionEvents {
            switch event {
            case .connected(let sessionPresent):
                connectedAt = .now
                if wasDisconnected {
                    hub.metrics.mqttReconnected()
                    logger.notice(
                        "mqtt: reconnected (session \(sessionPresent ? "resumed" : "new")); re-publishing status, discovery and state")
                    wasDisconnected = false
                }
                if lease?.isCurrent == false {
                    // Paused or cut off longer than the lease: another instance may be active, and
                    // this one's read models stale. Said once the lease is renewed, never if it is lost.
                    skippedAnnouncement.store(true, ordering: .relaxed)
                    logger.notice("mqtt: connected, but this instance's lease is not confirmed: announcing nothing until it is renewed")
                } else {
                    await announce()
                }
            case .disconnected(let reason):
                wasDisconnected = true
                disconnected(reason)
            case .failed(let reason):
                throw HubError.failed("mqtt: \(reason)")
            }
        }
    }

    /// Names what a disconnect means and backs off when the broker keeps dropping the hub right
    /// after accepting it: the shortest reconnect delay doubles (1 s to 30 s) with each brief
    /// connection in a row, and is reset once a connection lasts.
    func disconnected(_ reason: String) {
        let brief = connectedAt.map { ContinuousClock.now - $0 < Self.briefConnection } ?? false
        connectedAt = nil
        let settings = client.options.reconnectDelay
        if brief {
            briefDrops += 1
        } else if briefDrops > 0 {
            briefDrops = 0
            client.setReconnectDelay(settings)
        }
        let wait = briefDrops == 0 ? settings.min : min(settings.max, settings.min * (1 << min(briefDrops, 5)))
        if briefDrops > 0 {
            client.setReconnectDelay(MQTTOptions.ReconnectDelay(min: wait, max: settings.max, exponential: settings.exponential))
        }
        let id = client.options.clientId
        if reason.contains("Session taken over") {
            logger.error(
                """
                mqtt: the broker gave this hub's session to another client with the same client id "\(id)" (MQTT reason 0x8E, session taken over): \
                two hubs, or a hub and another program, use one client id; give each its own (--mqtt-client-id; hubs sharing a PostgreSQL log: \
                --instance). Backing off: \(wait) between reconnects
                """)
        } else if briefDrops >= 3 {
            logger.error(
                """
                mqtt: the broker dropped the connection \(briefDrops) times in a row within \(Self.briefConnection) of accepting it (\(reason)): \
                another client with this hub's client id "\(id)" may be taking its session, or the broker drops the hub after refusing one of \
                its publishes (mosquitto before 2.0.22 with max_queued_messages 0: set a large number); see the broker's log. Backing off: \(wait) between reconnects
                """)
        } else {
            logger.warning("mqtt: disconnected (\(reason)); reconnecting")
        }
    }

    /// `online`, the retained messages kept for every connect, storage, discovery and state.
    package func announce() async {
        publishOrLog(topics.status, Array("online".utf8))
        for (topic, payload) in retainedOnConnect.withLock({ $0 }) { publishOrLog(topic, payload) }
        publishStorage(await StorageReport.current(hub))
        await republishAll()
    }

    /// True once after a (re)connect that announced nothing (see ``lease``).
    package nonisolated func takeSkippedAnnouncement() -> Bool { skippedAnnouncement.exchange(false, ordering: .relaxed) }

    /// Something other than `online` arrived on `<base>/status` while this hub speaks for it: most
    /// likely the last will of a connection the broker dropped late (a former active that was paused
    /// or cut off, after this one took over; or this hub's own previous connection). The hub is
    /// online, so it says so again.
    nonisolated func defendStatus(_ message: MQTTMessage) {
        let text = String(decoding: message.payload, as: UTF8.self)
        guard text != "online", speaksForHub.load(ordering: .relaxed), !leaving.load(ordering: .relaxed),
            lease?.isCurrent ?? true
        else { return }
        logger.notice(
            "mqtt: \(topics.status) says \"\(text)\" (a former connection's last will) while this hub is active: saying online again")
        publishOrLog(topics.status, Array("online".utf8))
    }

    /// A retained publish the hub cannot do is said, never dropped silently (the client refuses only
    /// when it is stopping or the payload is malformed).
    package nonisolated func publishOrLog(_ topic: String, _ payload: [UInt8], retain: Bool = true) {
        do {
            try client.publish(topic, payload, qos: 1, retain: retain)
        } catch let error as MQTTError where error.kind == .withheld {
            // Counted (``withheld``) and said once when the surface leaves.
        } catch {
            logger.warning("mqtt: could not publish", metadata: ["topic": "\(topic)", "error": "\(error)"])
        }
    }

    /// The disk's condition, retained on `<base>/status/storage`: after every connect and whenever
    /// the storage watch sees it change.
    package nonisolated func publishStorage(_ report: StorageReport) {
        publishOrLog(topics.storageStatus, Array(report.json.serialized().utf8))
    }

    /// Discovery for every device and animal, then their state: after every (re)connect and when
    /// Home Assistant announces itself.
    func republishAll() async {
        lastRetained.removeAll()  // the broker may have lost them (restart): send everything again
        let state = await hub.state
        for device in state.devices.all {
            if device.removed {
                for topic in discovery.deviceRemovals(device) { publishOrLog(topic, []) }
            } else if announcesToHomeAssistant(device) {
                announce(device, sensors: await offeredSensors(device))
            } else {
                withhold(device)
            }
            publishDevice(Hub.DeviceView(state, device))
        }
        for group in state.household.groups.values {
            publishGroup(group, StateJSON.group(group, devices: state.devices), announce: true)
        }
        for scene in state.household.scenes.values { announce(scene) }
        for animal in state.animals.byId.values {
            if animal.isAdmitted {
                announce(animal)
            } else {
                for topic in discovery.animalRemovals(animal) { publishOrLog(topic, []) }
            }
            publishState(topics.animalState(animal.id), Array(StateJSON.animal(animal).serialized().utf8))
        }
    }

    /// The last payload sent on each retained state topic: an unchanged value is not sent again
    /// (a reading that moves only the power leaves switch and availability alone).
    var lastRetained: [String: [UInt8]] = [:]

    func publishState(_ topic: String, _ payload: [UInt8]) {
        guard lastRetained[topic] != payload else { return }
        do {
            try client.publish(topic, payload, qos: 1, retain: true)
            lastRetained[topic] = payload
        } catch {
            lastRetained[topic] = nil
        }
    }

    /// The sensors a device is offered.
    struct OfferedSensors: Equatable {
        /// The quantities its running driver reports, and any it has reported (a reading in the log).
        var readings: Set<Quantity>
        /// Whether a driver runs for it (its readings are known): only then are the others cleared.
        var complete: Bool
    }

    func offeredSensors(_ device: DeviceRecord) async -> OfferedSensors {
        let reported = Set(HomeAssistantDiscovery.meterQuantities.filter { device.lastReading($0) != nil })
        guard let declared = await drivers.readings(of: device.id) else { return OfferedSensors(readings: reported, complete: false) }
        return OfferedSensors(readings: declared.union(reported), complete: true)
    }

    /// Publishes the device's switch and its offered sensors; once its driver runs, clears the
    /// config of every sensor not offered (one an older hub announced for a device without a meter).
    func announce(_ device: DeviceRecord, sensors: OfferedSensors) {
        for (topic, payload) in discovery.deviceConfigs(device, readings: sensors.readings) { publish(topic, payload) }
        if sensors.complete {
            for topic in discovery.sensorRemovals(id: device.id, offered: sensors.readings) { publishOrLog(topic, []) }
        }
        announcedDevices[device.id] = (device.name, sensors)
        withheldDevices.remove(device.id)
    }

    /// Whether Home Assistant is told of the device: asked of a driver made from its settings and
    /// never started (making one has no side effects), so it holds before the driver runs; kept
    /// until the device's driver or settings change. A device whose driver this hub lacks, or whose
    /// settings it refuses, is announced.
    func announcesToHomeAssistant(_ device: DeviceRecord) -> Bool {
        if let known = homeAssistantPolicy[device.id], known.driver == device.driver, known.config == device.config {
            return known.announces
        }
        var announces = true
        if let factory = drivers.catalog.factories[device.driver],
            let made = try? factory.make(
                configuration: DriverConfiguration(deviceId: device.id, driver: device.driver, settingsJSON: device.config))
        {
            announces = made.capabilities.announcesToHomeAssistant
        }
        homeAssistantPolicy[device.id] = (device.driver, device.config, announces)
        return announces
    }

    /// Clears the Home Assistant configs of a device its driver does not announce (ones this hub
    /// published before the setting changed, or an older hub did).
    func withhold(_ device: DeviceRecord) {
        for topic in discovery.deviceRemovals(device) { publishOrLog(topic, []) }
        announcedDevices[device.id] = nil
        withheldDevices.insert(device.id)
    }

    func announce(_ scene: SceneRecord) {
        let (topic, payload) = discovery.sceneConfig(scene)
        publish(topic, payload)
        announcedScenes.insert(scene.id)
    }

    /// Announces the scenes that were defined or redefined, and clears those removed.
    func publishScenes(changed ids: Set<String>) async {
        guard !ids.isEmpty else { return }
        let scenes = await hub.state.household.scenes
        for id in ids.sorted() {
            if let scene = scenes[id] {
                announce(scene)
            } else {
                publishOrLog(discovery.sceneConfigTopic(id), [])
                announcedScenes.remove(id)
            }
        }
    }

    func announce(_ animal: AnimalRecord) {
        for (topic, payload) in discovery.animalConfigs(animal) { publish(topic, payload) }
        announcedAnimals.insert(animal.id)
    }

    func publish(_ topic: String, _ payload: JSONValue, retain: Bool = true) {
        publishOrLog(topic, Array(payload.serialized().utf8), retain: retain)
    }

    // MARK: State out

    /// Called for every committed event: its stream's state is re-published (coalesced under load).
    public nonisolated func changed(stream: StreamKey) {
        dirty.withLock { _ = $0.insert(stream) }
        wake.yield()
    }

    func publishStates() async {
        for await _ in wakes {
            let streams = dirty.withLock { dirty in
                defer { dirty.removeAll() }
                return dirty
            }
            let deviceIds = streams.compactMap(\.deviceId)
            let animalIds = streams.compactMap(\.animalId)
            let (devices, animals) = await hub.views(devices: deviceIds, animals: animalIds)
            let groupIds = Set(streams.compactMap(\.groupId))
            if !groupIds.isEmpty || !deviceIds.isEmpty { await publishGroups(changed: groupIds, devices: Set(deviceIds)) }
            await publishScenes(changed: Set(streams.compactMap(\.sceneId)))
            for view in devices {
                let device = view.record
                if device.removed {
                    for topic in discovery.deviceRemovals(device) { publishOrLog(topic, []) }
                    announcedDevices[device.id] = nil
                } else if !announcesToHomeAssistant(device) {
                    if !withheldDevices.contains(device.id) { withhold(device) }
                } else {
                    let sensors = await offeredSensors(device)
                    let announced = announcedDevices[device.id]
                    if announced?.name != device.name || announced?.sensors != sensors { announce(device, sensors: sensors) }
                }
                publishDevice(view)
            }
            for animal in animals {
                if animal.isAdmitted, !announcedAnimals.contains(animal.id) {
                    announce(animal)
                } else if !animal.isAdmitted, announcedAnimals.contains(animal.id) {
                    for topic in discovery.animalRemovals(animal) { publishOrLog(topic, []) }
                    announcedAnimals.remove(animal.id)
                }
                let live = await bridges.presence[animal.id]
                publishState(topics.animalState(animal.id), Array(StateJSON.animal(animal, live: live).serialized().utf8))
            }
        }
    }

    func publishDevice(_ view: Hub.DeviceView) {
        let now = currentMicros()
        let today = Civil.dayKey(dayNumber: Civil.dayNumber(micros: now))
        // The plain subtopics first: they are what Home Assistant's entities follow, and the
        // cheapest to build.
        for (topic, payload) in StateJSON.devicePlain(view.record, energy: view.energy, topics: topics) {
            publishState(topic, Array(payload.utf8))
        }
        publishState(
            topics.deviceState(view.record.id),
            Array(StateJSON.device(view, dayKey: today, now: now).serialized().utf8))
    }

    /// Groups announced to Home Assistant.
    var announcedGroups: Set<String> = []

    /// The state (and discovery) of groups that changed, or that contain a device that changed.
    func publishGroups(changed: Set<String>, devices: Set<String>) async {
        let (current, removed) = await hub.groupPayloads(groups: changed, devices: devices)
        for id in removed {
            publishState(topics.groupState(id), [])
            publishState(topics.groupSwitch(id), [])
            publishOrLog(discovery.groupConfigTopic(id), [])
            announcedGroups.remove(id)
        }
        for (group, state) in current {
            publishGroup(group, state, announce: changed.contains(group.id) || !announcedGroups.contains(group.id))
        }
    }

    func publishGroup(_ group: GroupRecord, _ state: JSONValue, announce: Bool) {
        if announce {
            let (topic, payload) = discovery.groupConfig(group)
            publish(topic, payload)
            announcedGroups.insert(group.id)
        }
        publishState(topics.groupState(group.id), Array(state.serialized().utf8))
        if case .string(let s)? = state["switch"] { publishState(topics.groupSwitch(group.id), Array(s.utf8)) }
    }

    // MARK: Events out

    /// How far the events stream has got: every event up to this sequence was acknowledged by the broker.
    public nonisolated var eventsAcknowledged: UInt64 { events.acknowledged }

    /// Events published on the events stream and not yet acknowledged by the broker (at most 256).
    public nonisolated var eventsInFlight: Int { events.inFlight }

    // MARK: Commands in

    /// One command message, parsed, waiting in its lane.
    struct Work: Sendable {
        var message: MQTTMessage
        var route: RequestRoute
        var parsed: RequestParser.ParsedCommand
        /// The client of a command under `<base>/from/<client>/`; nil for the plain topics.
        var client: String? = nil

        /// What the command is about (its first serialization key; the topic for a message without
        /// commands): its lane, and what it waits behind in the lane.
        var entity: Entity {
            if let command = parsed.commands.first { .key(Hub.serializationKeys(command)[0]) } else { .topic(message.topic) }
        }
    }

    /// What a command is about, for its lane: commands on one entity run in arrival order.
    enum Entity: Hashable, Sendable {
        case key(Hub.SerializationKey)
        case topic(String)
    }

    /// Routes and parses a message (in arrival order), answers what is malformed at once, and hands
    /// each command to the lane of the device or animal it is about: commands on one entity run in
    /// arrival order, commands on different entities run side by side.
    nonisolated func dispatch(_ message: MQTTMessage, lanes: [AsyncStream<Work>.Continuation]) {
        if topics.isStatus(message.topic) {
            defendStatus(message)
            return
        }
        let mqttRoute = topics.route(topic: message.topic)
        let route: RequestRoute
        var client: String? = nil
        switch mqttRoute {
        case .ignored:
            // Not the hub's: a device's or a bridge's topic (Tasmota, Shelly, beacons).
            relay?.deliver(message)
            return
        case .homeAssistantStatus:
            if String(decoding: message.payload, as: UTF8.self).trimmingCharacters(in: .whitespaces) == "online" {
                // Home Assistant restarted: re-announce after a short random delay (spreads the load of many publishers).
                announceRequest.yield()
            }
            return
        case .command(let request):
            route = request
        case .attributed(let name, let request):
            route = request
            client = name
        }
        if message.retain {
            // A retained command would be replayed at every subscription: never act on one.
            ignoredRetainedCount.add()
            logger.notice("mqtt: ignored a retained message on command topic \(message.topic) (commands are never retained)")
            return
        }
        if let problem = responseTopicProblem(message) {
            // Refused before anything runs: the answer says why, on the topic's own response topic.
            respond(
                AnswerJSON.error(RequestError(problem, echo: RequestParser.bestEffortEcho(message.payload))), to: message, route: route,
                client: client)
            return
        }
        if let client, let refusal = ClientName.problem(client) {
            let error = RequestError(refusal.message, code: refusal.code, echo: RequestParser.bestEffortEcho(message.payload))
            respond(AnswerJSON.error(error), to: message, route: route, client: client)
            return
        }
        let parsed: RequestParser.ParsedCommand
        do {
            parsed = try Self.declaringCause(
                RequestParser.parse(route: route, message: message.payload, now: currentMicros()), of: message)
        } catch {
            respond(AnswerJSON.error(error), to: message, route: route, client: client)
            return
        }
        let work = Work(message: message, route: route, parsed: parsed, client: client)
        let lane = Int(UInt(bitPattern: work.entity.hashValue) % UInt(lanes.count))
        commandWindow.queued()
        if case .dropped = lanes[lane].yield(work) {
            commandWindow.refused()
            hub.metrics.queueOverflowed("mqtt_command_lane")
            respond(
                AnswerJSON.error(
                    "the hub has \(Self.laneCapacity) commands waiting on this device or animal: this command was not carried out; "
                        + "send it again (the same command_id is carried out once)", code: CommandService.hubBusy, echo: parsed.echo),
                to: message, route: route, client: client)
        }
    }

    /// The MQTT 5 user property that declares a command's cause, beside the JSON field `cause`.
    static let causeProperty = "cause"

    /// `parsed` with the cause of the message's user property `cause` (checked like the JSON field).
    /// Both may be given when they agree; differing, the message is refused (`invalid_cause`).
    static func declaringCause(
        _ parsed: RequestParser.ParsedCommand, of message: MQTTMessage
    ) throws(RequestError) -> RequestParser.ParsedCommand {
        guard let declared = message.userProperty(causeProperty) else { return parsed }
        do { try DeclaredCause.check(declared) } catch {
            throw RequestError("user property \"cause\": \(error.message)", code: error.code, echo: parsed.echo)
        }
        if let given = parsed.cause, given != declared {
            throw RequestError(
                "the user property \"cause\" (\(declared)) and the payload's \"cause\" (\(given)) differ: give one, or the same in both",
                code: DeclaredCause.invalidCode, echo: parsed.echo)
        }
        var declaring = parsed
        declaring.cause = declared
        return declaring
    }

    nonisolated func handle(_ work: Work) async {
        let taken = ContinuousClock.now
        // The log's only writer answers (`log_unavailable`): no other instance can contradict it.
        if let lease, !lease.mayAct, !lease.soleWriter {
            unanswered(work, taken: taken)
            return
        }
        let answer = await answer(work.parsed, client: work.client)
        // A command's answer comes after its append is durable (the log's group commit has synced):
        // from here on a crash cannot lose it.
        let durable = ContinuousClock.now
        if lease != nil, answer["code"] == .string(CommandService.notActive) {
            unanswered(work, taken: taken)  // the lease lapsed while it ran: nothing was recorded
            return
        }
        saidUnanswered.store(false, ordering: .relaxed)
        respond(answer, to: work.message, route: work.route, client: work.client)
        commandWindow.finished(work, taken: taken, durable: durable, answered: ContinuousClock.now)
    }

    /// A hub whose lease is not confirmed (paused or cut off past it: another instance may be
    /// active) neither runs nor answers the commands its broker session delivers: an answer
    /// (`not_active`) could contradict the active's answer to the same command. The client's
    /// re-send with the same `command_id` is answered by the active hub (docs/mqtt.md).
    nonisolated func unanswered(_ work: Work, taken: ContinuousClock.Instant) {
        unansweredCount.add()
        if !saidUnanswered.exchange(true, ordering: .relaxed) {
            logger.warning(
                "mqtt: this instance's lease is not confirmed (paused or cut off): commands are neither run nor answered; the active hub answers their re-sends"
            )
        }
        commandWindow.finished(work, taken: taken, durable: taken, answered: taken)
    }

    /// Answered by the transport-neutral ``Requests`` (the HTTP API answers through it too).
    /// The actor is `mqtt`, or `mqtt:<client>` for a command under `<base>/from/<client>/`.
    nonisolated func answer(_ parsed: RequestParser.ParsedCommand, client: String? = nil) async -> JSONValue {
        await requests.answer(parsed, actor: Attribution.mqtt(client: client)).body
    }

    /// Why the message's MQTT 5 response topic must not be answered on; nil when it has none or may be.
    nonisolated func responseTopicProblem(_ message: MQTTMessage) -> String? {
        guard let topic = message.responseTopic, !topic.isEmpty else { return nil }
        return topics.responseTopicProblem(topic, deviceScopes: relay?.scopes ?? [])
    }

    /// One answer per command message the hub took in (none if it dies first: docs/mqtt.md, "What the
    /// hub promises for a command"): on the MQTT 5 response topic (with the correlation data)
    /// when the request named one the hub may publish on (`MQTTTopics.responseTopicProblem`), else on
    /// the surface's response topic.
    nonisolated func respond(_ answer: JSONValue, to message: MQTTMessage, route: RequestRoute, client sender: String? = nil) {
        let payload = Array(answer.serialized().utf8)
        if let responseTopic = message.responseTopic, !responseTopic.isEmpty, responseTopicProblem(message) == nil {
            do {
                try client.publish(responseTopic, payload, qos: 1, retain: false, correlationData: message.correlationData)
            } catch let error as MQTTError where error.kind == .withheld {
            } catch {
                logger.warning("mqtt: could not answer", metadata: ["topic": "\(responseTopic)", "error": "\(error)"])
            }
        } else if let topic = topics.response(for: sender.map { .attributed(client: $0, route) } ?? .command(route))
            ?? topics.response(forTopic: message.topic)
        {
            publishOrLog(topic, payload, retain: false)
        }
        answeredCount.add()
    }
}

extension MQTTSurface: MessagingLink {
    /// Whether the broker connection is up.
    nonisolated public var isConnected: Bool { client.isConnected }
    /// The broker connection's message counts.
    nonisolated public var traffic: MessagingTraffic {
        let t = client.traffic
        return MessagingTraffic(received: t.received, published: t.published, dropped: t.dropped)
    }
}
