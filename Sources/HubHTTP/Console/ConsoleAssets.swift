/// The console's stylesheet and script, embedded in the binary (nothing is fetched at run time,
/// so the console works on a LAN without internet). Served at `/console/console.css` and
/// `/console/console.js`.
enum ConsoleAssets {
    static let css = #"""
        :root { --bg:#f6f7f9; --card:#fff; --ink:#1d2330; --muted:#5d6778; --line:#dde1e8; --accent:#1f6feb;
                --on:#1a7f37; --off:#6e7781; --bad:#cf222e; --warn:#9a6700; }
        @media (prefers-color-scheme: dark) {
          :root { --bg:#0d1117; --card:#161b22; --ink:#e6edf3; --muted:#8d96a0; --line:#30363d; --accent:#4493f8;
                  --on:#3fb950; --off:#8d96a0; --bad:#f85149; --warn:#d29922; }
        }
        * { box-sizing: border-box; }
        body { margin:0; font:16px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background:var(--bg); color:var(--ink); }
        header { display:flex; flex-wrap:wrap; align-items:center; gap:.25rem 1rem; padding:.6rem 1rem; background:var(--card);
                 border-bottom:1px solid var(--line); position:sticky; top:0; z-index:2; }
        header .brand { font-weight:700; margin-right:.5rem; }
        header nav { display:flex; flex-wrap:wrap; gap:.25rem; }
        header nav a { padding:.35rem .7rem; border-radius:.5rem; color:var(--ink); text-decoration:none; }
        header nav a[aria-current=page] { background:var(--accent); color:#fff; }
        main { max-width:72rem; margin:0 auto; padding:1rem; }
        h1 { font-size:1.5rem; margin:.2rem 0 1rem; }
        h2 { font-size:1.15rem; margin:1.6rem 0 .6rem; }
        a { color:var(--accent); }
        .muted { color:var(--muted); font-size:.9rem; }
        .grid { display:grid; grid-template-columns:repeat(auto-fill, minmax(17rem, 1fr)); gap:.8rem; }
        .card { background:var(--card); border:1px solid var(--line); border-radius:.75rem; padding:.8rem .9rem; }
        .card h3 { margin:0 0 .4rem; font-size:1.05rem; display:flex; justify-content:space-between; gap:.5rem; align-items:center; }
        .card dl { display:grid; grid-template-columns:auto 1fr; gap:.15rem .8rem; margin:.4rem 0 .6rem; font-size:.92rem; }
        .card dt { color:var(--muted); }
        .card dd { margin:0; overflow-wrap:anywhere; }
        .row { display:flex; flex-wrap:wrap; gap:.5rem; align-items:center; }
        button, .button { font:inherit; padding:.5rem .9rem; border-radius:.55rem; border:1px solid var(--line); background:var(--card);
                          color:var(--ink); cursor:pointer; min-height:2.5rem; text-decoration:none; display:inline-block; }
        button.primary { background:var(--accent); border-color:var(--accent); color:#fff; }
        button.danger { border-color:var(--bad); color:var(--bad); }
        button:disabled { opacity:.55; cursor:wait; }
        .state { font-weight:700; text-transform:uppercase; font-size:.85rem; padding:.1rem .5rem; border-radius:1rem; border:1px solid currentColor; }
        [data-state=on] .state, .state.on { color:var(--on); }
        [data-state=off] .state, .state.off { color:var(--off); }
        .offline { color:var(--bad); }
        .pending { color:var(--warn); }
        table { border-collapse:collapse; width:100%; background:var(--card); font-size:.92rem; }
        th, td { text-align:left; padding:.4rem .55rem; border-bottom:1px solid var(--line); vertical-align:top; }
        th { color:var(--muted); font-weight:600; }
        .scroll { overflow-x:auto; border:1px solid var(--line); border-radius:.6rem; }
        form.stack { display:grid; grid-template-columns:repeat(auto-fill, minmax(14rem, 1fr)); gap:.6rem .9rem; }
        form.inline { display:flex; flex-wrap:wrap; gap:.5rem; align-items:flex-end; }
        label { display:flex; flex-direction:column; gap:.2rem; font-size:.88rem; color:var(--muted); }
        input, select, textarea { font:inherit; padding:.45rem .55rem; border-radius:.45rem; border:1px solid var(--line);
                                  background:var(--bg); color:var(--ink); min-height:2.4rem; }
        textarea { min-height:4rem; }
        form .wide { grid-column:1 / -1; }
        fieldset.plain { border:0; padding:0; margin:0; min-width:0; display:contents; }
        fieldset.plain[hidden] { display:none; }
        label.check { flex-direction:row; align-items:center; gap:.3rem; color:var(--ink); }
        .zone-note { margin-top:2rem; }
        .ranges { margin:.2rem 0 .5rem; }
        .ranges a { margin-right:.6rem; }
        .ranges a[aria-current] { font-weight:700; color:var(--ink); text-decoration:none; }
        svg.chart { width:100%; height:auto; background:var(--card); border:1px solid var(--line); border-radius:.6rem; }
        svg.chart text { fill:var(--muted); font-size:11px; }
        svg.chart .band { fill:var(--accent); opacity:.22; }
        svg.chart .mean { stroke:var(--accent); stroke-width:1.6; fill:none; }
        svg.chart .max { stroke:var(--bad); stroke-width:1; fill:none; stroke-dasharray:3 3; }
        svg.chart .bar { fill:var(--accent); }
        svg.chart .dot { fill:var(--accent); }
        svg.chart .grid { stroke:var(--line); stroke-width:1; }
        .ok-box, .error-box { padding:.6rem .8rem; border-radius:.5rem; margin:.5rem 0; border:1px solid; overflow-wrap:anywhere; }
        .ok-box { border-color:var(--on); color:var(--on); }
        .error-box { border-color:var(--bad); color:var(--bad); }
        #answer { position:fixed; left:1rem; right:1rem; bottom:1rem; max-width:40rem; margin:0 auto; z-index:3; background:var(--card);
                  box-shadow:0 4px 18px rgba(0,0,0,.18); }
        #answer:empty { display:none; }
        #live-note { display:none; }
        [data-field="last-request"]:empty { display:none; }
        #live-note.shown { display:block; }
        img.photo { max-width:12rem; max-height:12rem; border-radius:.5rem; border:1px solid var(--line); }
        code, .mono { font-family:ui-monospace, SFMono-Regular, Menlo, monospace; font-size:.85rem; overflow-wrap:anywhere; }
        @media (max-width: 40rem) { main { padding:.6rem; } th, td { padding:.35rem; } }
        """#

    static let js = #"""
        "use strict";
        (function () {
          // The household's time zone (the hub's `time_zone`): every time a person types is read in it.
          var zone = document.body.dataset.zone || "UTC";
          function csrf() {
            var m = document.cookie.match(/(?:^|;\s*)hub_csrf=([^;]*)/);
            return m ? decodeURIComponent(m[1]) : "";
          }
          // Every action: fetch with the CSRF header (never a plain form post).
          async function post(url, body, type) {
            var r;
            try {
              r = await fetch(url, { method: "POST", credentials: "same-origin",
                headers: { "Content-Type": type || "application/json", "X-CSRF-Token": csrf() }, body: body });
            } catch (e) { return { status: "error", error: "the hub did not answer: " + e }; }
            try { return await r.json(); } catch (e) { return { status: "error", error: "HTTP " + r.status + " " + r.statusText }; }
          }
          function say(answer) {
            var box = document.getElementById("answer");
            if (!box) return;
            var ok = answer.status === "ok";
            box.className = ok ? "ok-box" : "error-box";
            box.textContent = ok ? "Done" + (answer.seq != null ? " (event " + answer.seq + ")" : "") + conflicts(answer)
                                 : (answer.code ? answer.code + ": " : "") + (answer.error || "refused");
            clearTimeout(say.timer);
            say.timer = setTimeout(function () { box.textContent = ""; box.className = ""; }, ok ? 4000 : 12000);
          }
          function conflicts(answer) {
            var list = answer.conflicts || [];
            if (!list.length) return "";
            return "; " + list.map(function (c) { return "“" + c.first + "” overlaps “" + c.second + "” from " + c.at; }).join("; ");
          }
          async function command(body) {
            var answer = await post("/console/command", JSON.stringify(body));
            say(answer);
            return answer;
          }
          // After an accepted action that changes the page's lists: reload (later when there is more to read).
          function reloadSoon(answer) {
            setTimeout(function () { location.reload(); }, (answer.conflicts || []).length ? 4000 : 500);
          }
          function pad(n) { return (n < 10 ? "0" : "") + n; }
          // Minutes east of UTC of the hub's zone at the instant `ms`.
          function offsetAt(ms) {
            var p = {};
            new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric",
              hour: "numeric", minute: "numeric", second: "numeric" }).formatToParts(new Date(ms)).forEach(function (x) { p[x.type] = x.value; });
            var wall = Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour % 24, +p.minute, +p.second);
            return Math.round((wall - Math.floor(ms / 1000) * 1000) / 60000);
          }
          // A date-time picker's "2026-11-27T18:00", read in the hub's zone: "2026-11-27T18:00:00+01:00".
          function zonedTime(v) {
            var m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(v);
            if (!m) return v; // not a picker's value: the hub says what is wrong with it
            var wall = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +(m[6] || 0));
            var off = offsetAt(wall);
            off = offsetAt(wall - off * 60000);
            var a = Math.abs(off);
            return m[1] + "-" + m[2] + "-" + m[3] + "T" + m[4] + ":" + m[5] + ":" + (m[6] || "00")
              + (off < 0 ? "-" : "+") + pad(Math.floor(a / 60)) + ":" + pad(a % 60);
          }
          // Sets `value` at a dotted path ("repeat.at") of `into`; `list` makes the end an array.
          function put(into, name, value, list) {
            var keys = name.split("."), o = into;
            for (var i = 0; i < keys.length - 1; i++) { o = o[keys[i]] = o[keys[i]] || {}; }
            var last = keys[keys.length - 1];
            if (list) (o[last] = o[last] || []).push(value); else o[last] = value;
          }
          // The command object from a form's fields. A field's `data-type` says how to read it: number,
          // local (a date-time in the hub's zone), json; checkboxes of one name make a list; fields that
          // are disabled (a repeat mode not chosen), a mode's own select and empty ones are left out.
          function fields(form, into) {
            for (var i = 0; i < form.elements.length; i++) {
              var el = form.elements[i];
              if (!el.name || el.type === "file" || el.type === "submit" || el.matches(":disabled") || "modes" in el.dataset) continue;
              if (el.type === "checkbox") { if (el.checked) put(into, el.name, el.value, true); continue; }
              var v = el.value.trim();
              if (v === "") continue;
              if (el.dataset.type === "number") v = Number(v);
              else if (el.dataset.type === "local") v = zonedTime(v);
              else if (el.dataset.type === "json") { try { v = JSON.parse(v); } catch (e) { v = null; } }
              put(into, el.name, v, false);
            }
            return into;
          }
          // A `select[data-modes]` shows the `fieldset[data-mode]` of its value and disables the others.
          function showMode(select) {
            select.form.querySelectorAll("fieldset[data-mode]").forEach(function (f) {
              var on = f.dataset.mode === select.value;
              f.disabled = !on; f.hidden = !on;
            });
          }
          document.querySelectorAll("select[data-modes]").forEach(showMode);
          document.addEventListener("change", function (e) { if (e.target.matches("select[data-modes]")) showMode(e.target); });

          // A button's own command (a form's command goes with its fields, on submit).
          document.addEventListener("click", async function (e) {
            var b = e.target.closest("[data-command]");
            if (!b || b.tagName === "FORM" || b.form) return;
            e.preventDefault();
            if (b.dataset.confirm && !window.confirm(b.dataset.confirm)) return;
            b.disabled = true;
            try {
              var answer = await command(JSON.parse(b.dataset.command));
              if (answer.status === "ok" && b.dataset.after === "reload") reloadSoon(answer);
            } finally { b.disabled = false; }
          });
          document.addEventListener("submit", async function (e) {
            var form = e.target.closest("form[data-command]");
            if (!form) return;
            e.preventDefault();
            // Enter in a field submits too: a form that changes something for good asks first.
            if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) return;
            var submit = form.querySelector("[type=submit]");
            if (submit) submit.disabled = true;
            try {
              var body = fields(form, JSON.parse(form.dataset.command));
              var file = form.querySelector("input[type=file]");
              if (file && file.files.length) {
                var up = await post("/console/photo", file.files[0], file.files[0].type || "application/octet-stream");
                if (up.status !== "ok") { say(up); return; }
                body.photo = up.photo;
              }
              if (form.dataset.split) { // one command per filled field (vitals: heart rate and temperature)
                var base = body, list = [];
                JSON.parse(form.dataset.split).forEach(function (q) {
                  if (base[q] == null) return;
                  var c = JSON.parse(form.dataset.command);
                  c.quantity = q; c.value = base[q];
                  if (base.measured_at) c.measured_at = base.measured_at;
                  list.push(c);
                });
                if (!list.length) { say({ status: "error", error: "fill in at least one of the fields" }); return; }
                body = list.length === 1 ? list[0] : list;
              }
              var answer = await command(body);
              if (answer.status === "ok" && form.dataset.after === "reload") reloadSoon(answer);
            } finally { if (submit) submit.disabled = false; }
          });
          // Fill a form from a row's "Edit" button: `data-fill` holds the values by field name (a list
          // ticks the checkboxes of that name); the others are reset.
          document.addEventListener("click", function (e) {
            var b = e.target.closest("[data-fill]");
            if (!b) return;
            e.preventDefault();
            var form = document.getElementById(b.dataset.target);
            var values = JSON.parse(b.dataset.fill);
            form.reset(); // what the values do not name goes back to its default (a scene's other devices: not in it)
            Object.keys(values).forEach(function (k) {
              var v = values[k];
              form.querySelectorAll('[name="' + k + '"]').forEach(function (el) {
                if (el.type === "checkbox") el.checked = Array.isArray(v) ? v.indexOf(el.value) >= 0 : !!v;
                else if (el.type !== "hidden") el.value = v;
              });
            });
            form.querySelectorAll("select[data-modes]").forEach(showMode);
            form.scrollIntoView({ behavior: "smooth" });
            var first = form.querySelector("input:not([type=hidden]):not(:disabled)");
            if (first) first.focus({ preventScroll: true });
          });

          // Live updates: the server pushes each device's state as the log commits it.
          function set(root, field, text) {
            root.querySelectorAll('[data-field="' + field + '"]').forEach(function (el) { el.textContent = text; });
          }
          function update(root, d) {
            var state = d.switch ? d.switch.toLowerCase() : "unknown";
            root.dataset.state = state;
            set(root, "state", state);
            set(root, "mode", d.mode);
            set(root, "pending", d.pending ? "switching " + d.pending.state.toLowerCase() : "");
            set(root, "availability", d.availability);
            set(root, "reason", d.availability_reason || "");
            set(root, "power", d.power == null ? "–" : d.power + " W");
            set(root, "voltage", d.voltage == null ? "–" : d.voltage + " V");
            set(root, "current", d.current == null ? "–" : d.current + " A");
            set(root, "energy", d.energy == null ? "–" : d.energy + " kWh");
            set(root, "failure", d.last_failure ? "failed to switch " + d.last_failure.state.toLowerCase() + ": " + d.last_failure.reason : "");
          }
          if (window.EventSource && document.body.hasAttribute("data-live")) {
            var watched = (document.body.dataset.live || "").split(" ").filter(Boolean);
            // A device page's "Recent events" asks for the rows of its device's events too.
            var table = document.querySelector("tbody[data-events]");
            var source = new EventSource("/console/events" + (table ? "?entries=" + encodeURIComponent(table.dataset.events) : ""));
            // `data-live-open` on the body while the stream is connected (what a test waits for).
            source.addEventListener("open", function () { document.body.setAttribute("data-live-open", ""); });
            source.addEventListener("error", function () { document.body.removeAttribute("data-live-open"); });
            var offerReload = function () {
              var note = document.getElementById("live-note");
              if (note) note.className = "shown ok-box";
            };
            source.addEventListener("device", function (e) {
              var d = JSON.parse(e.data), shown = false;
              document.querySelectorAll("[data-device]").forEach(function (el) {
                if (el.dataset.device === d.id) { update(el, d); shown = true; }
              });
              if (!shown && watched.indexOf("device/") >= 0) offerReload(); // a device this page does not list yet
            });
            // Who asked a device to switch: the device page's "Switched on by ..." line.
            source.addEventListener("request", function (e) {
              var r = JSON.parse(e.data);
              document.querySelectorAll("[data-device]").forEach(function (el) {
                if (el.dataset.device === r.id) set(el, "last-request", r.text);
              });
            });
            // A device's events as the log commits them: the device page's "Recent events" rows, newest first.
            source.addEventListener("entry", function (e) {
              var x = JSON.parse(e.data);
              document.querySelectorAll("tbody[data-events]").forEach(function (body) {
                if (body.dataset.events !== x.id || body.querySelector('tr[data-seq="' + x.seq + '"]')) return;
                var first = body.querySelector("tr[data-seq]");
                if (first && Number(first.dataset.seq) > x.seq) return; // older than what the page shows
                body.insertAdjacentHTML("afterbegin", x.row);
                while (body.rows.length > Number(body.dataset.keep || 30)) body.deleteRow(body.rows.length - 1);
                var box = body.closest(".scroll"), none = box && box.previousElementSibling;
                if (box) box.hidden = false;
                if (none && none.hasAttribute("data-events-none")) none.remove();
              });
            });
            source.addEventListener("change", function (e) {
              var c = JSON.parse(e.data);
              if (c.type === "MultiSwitchRequested") return; // a group or scene used: its devices update in place
              if (watched.some(function (p) { return c.stream.indexOf(p) === 0; })) offerReload();
            });
            source.addEventListener("reload", function () { source.close(); setTimeout(function () { location.reload(); }, 500); });
          }
        })();
        """#
}
