import Foundation
import HubJSON

/// A person's input, sent as the browser's own input events (DevTools `Input` domain): a mouse
/// press and release at an element's centre, keys typed into the focused field, Enter. The page
/// cannot tell these from a person's.
extension Page {
    /// Scrolls the first element matching `selector` to the middle of the window and returns its
    /// centre in window coordinates.
    /// - Throws: `BrowserError` when nothing matches or the element has no size (hidden).
    func centre(of selector: String) async throws -> (x: Double, y: Double) {
        let literal = JSONValue.string(selector).serialized()
        let box = try await evaluate(
            """
            (() => { const e = document.querySelector(\(literal)); if (!e) return null;
              e.scrollIntoView({block: "center", inline: "center"}); const r = e.getBoundingClientRect();
              return r.width > 0 && r.height > 0 ? [r.x + r.width / 2, r.y + r.height / 2] : "hidden"; })()
            """)
        if box == .null { throw BrowserError("nothing to click: no element matches \(selector)\(logSuffix())") }
        guard let xy = box.arrayValue, xy.count == 2, let x = xy[0].doubleValue, let y = xy[1].doubleValue else {
            throw BrowserError("\(selector) is not shown (no size on the page), so a person cannot click it\(logSuffix())")
        }
        return (x, y)
    }

    /// A left click at the centre of the first element matching `selector`, as a mouse makes it
    /// (press, release): focus, the page's handlers, a form's submission all follow as for a person.
    /// - Throws: `BrowserError` when nothing matches or the element is hidden, or when another
    ///   element (an overlay) covers its centre.
    public func mouseClick(_ selector: String) async throws {
        let (x, y) = try await centre(of: selector)
        let literal = JSONValue.string(selector).serialized()
        let hit = try await evaluate(
            """
            (() => { const e = document.querySelector(\(literal)), h = document.elementFromPoint(\(x), \(y));
              return e === h || e.contains(h) || (h && h.control === e) ? true : (h ? h.outerHTML.slice(0, 120) : "nothing"); })()
            """)
        guard hit == .bool(true) else {
            throw BrowserError("a click on \(selector) would land on \(hit.stringValue ?? hit.serialized()) instead\(logSuffix())")
        }
        for type in ["mousePressed", "mouseReleased"] {
            _ = try await pipe.call(
                "Input.dispatchMouseEvent",
                [
                    "type": .string(type), "x": .number(x), "y": .number(y),
                    "button": "left", "clickCount": 1
                ], session: session)
        }
    }

    /// Clicks into the field matching `selector`, selects what it holds and types `text` over it
    /// (the browser's text input: `input` events as for a keyboard).
    public func type(_ selector: String, _ text: String) async throws {
        try await mouseClick(selector)
        let literal = JSONValue.string(selector).serialized()
        try await evaluate("(() => { const e = document.querySelector(\(literal)); if (e.select) e.select(); })()")
        if text.isEmpty {
            try await press("Backspace")
        } else {
            _ = try await pipe.call("Input.insertText", ["text": .string(text)], session: session)
        }
    }

    /// Sets a picker (a date, a time, a select) to `value` as choosing it does: the value, then
    /// the `input` and `change` events the page listens to.
    /// - Throws: `BrowserError` when nothing matches, or the picker refuses the value (a select
    ///   without that option, a date input given something that is not a date).
    public func pick(_ selector: String, _ value: String) async throws {
        _ = try await centre(of: selector)
        let literal = JSONValue.string(selector).serialized(), text = JSONValue.string(value).serialized()
        let taken = try await evaluate(
            """
            (() => { const e = document.querySelector(\(literal)); e.focus(); e.value = \(text);
              e.dispatchEvent(new Event("input", {bubbles: true})); e.dispatchEvent(new Event("change", {bubbles: true}));
              return e.value === \(text); })()
            """)
        guard taken == .bool(true) else { throw BrowserError("\(selector) does not take the value \(value)\(logSuffix())") }
    }

    /// Presses a key on the focused element: `Enter` (submits a form from a field), `Backspace`, `Tab`.
    public func press(_ key: String) async throws {
        let codes: [String: (code: Int, text: String?)] = ["Enter": (13, "\r"), "Backspace": (8, nil), "Tab": (9, nil)]
        guard let k = codes[key] else { throw BrowserError("press: no key named \(key)") }
        var down: [(String, JSONValue)] = [
            ("type", k.text == nil ? "rawKeyDown" : "keyDown"), ("key", .string(key)), ("code", .string(key)),
            ("windowsVirtualKeyCode", .number(Double(k.code)))
        ]
        if let text = k.text { down.append(("text", .string(text))) }
        _ = try await pipe.call("Input.dispatchKeyEvent", .object(down), session: session)
        _ = try await pipe.call(
            "Input.dispatchKeyEvent",
            [
                "type": "keyUp", "key": .string(key), "code": .string(key),
                "windowsVirtualKeyCode": .number(Double(k.code))
            ], session: session)
    }

    /// Chooses `paths` in the file input matching `selector`, as the file picker does.
    public func chooseFiles(_ selector: String, _ paths: [String]) async throws {
        let document = try await pipe.call("DOM.getDocument", ["depth": 0], session: session)
        guard let root = document["root"]?["nodeId"] else { throw BrowserError("DOM.getDocument: no root node") }
        let found = try await pipe.call("DOM.querySelector", ["nodeId": root, "selector": .string(selector)], session: session)
        guard let node = found["nodeId"], node.doubleValue != 0 else { throw BrowserError("no file input matches \(selector)") }
        _ = try await pipe.call("DOM.setFileInputFiles", ["nodeId": node, "files": .array(paths.map { .string($0) })], session: session)
    }

    /// The dialogs (`confirm`, `alert`) the page opened so far, by their message; the harness
    /// accepts each, as a person pressing OK.
    public var dialogs: [String] { pipe.dialogs(session: session) }
}
