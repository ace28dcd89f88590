import DriverAPI

/// Reading replies: every module and every method sub-reply carries its own `err_code`.
enum KasaReply {
    /// The sub-reply of `module.method`, after checking `err_code` at the module and at the method.
    static func method(_ reply: JSONValue, _ module: String, _ method: String) throws(KasaClientError) -> JSONValue {
        guard let moduleReply = reply[module], case .object = moduleReply else {
            throw .badReply("no \"\(module)\" in the reply")
        }
        try check(moduleReply, path: module)
        guard let methodReply = moduleReply[method], case .object = methodReply else {
            throw .badReply("no \"\(module).\(method)\" in the reply")
        }
        try check(methodReply, path: "\(module).\(method)")
        return methodReply
    }

    /// Throws `.device` when the object carries a non-zero `err_code`.
    static func check(_ object: JSONValue, path: String) throws(KasaClientError) {
        guard let code = KasaJSON.int(object["err_code"]), code != 0 else { return }
        throw .device(path: path, code: code, message: object["err_msg"]?.stringValue ?? "")
    }
}

/// One energy-meter sample in the hub's units, from either firmware style.
struct KasaEmeterSample: Equatable, Sendable {
    var power: Double?  // W
    var voltage: Double?  // V
    var current: Double?  // A
    var energyWh: Double?  // cumulative Wh

    /// Reads `get_realtime`: new firmware (`power_mw`, `voltage_mv`, `current_ma`, `total_wh`) or
    /// old firmware (`power` W, `voltage` V, `current` A, `total` kWh).
    init(realtime r: JSONValue) {
        power = KasaJSON.double(r["power_mw"]).map { $0 / 1000 } ?? KasaJSON.double(r["power"])
        voltage = KasaJSON.double(r["voltage_mv"]).map { $0 / 1000 } ?? KasaJSON.double(r["voltage"])
        current = KasaJSON.double(r["current_ma"]).map { $0 / 1000 } ?? KasaJSON.double(r["current"])
        energyWh = KasaJSON.double(r["total_wh"]) ?? KasaJSON.double(r["total"]).map { $0 * 1000 }
    }

    /// The readings as (quantity, value) pairs, in the event catalogue's names.
    var readings: [(Quantity, Double)] {
        var out: [(Quantity, Double)] = []
        if let power { out.append((.power, power)) }
        if let voltage { out.append((.voltage, voltage)) }
        if let current { out.append((.current, current)) }
        if let energyWh { out.append((.energy, energyWh)) }
        return out
    }
}
