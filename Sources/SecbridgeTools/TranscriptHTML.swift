import SecbridgeCLI
import ISO7816
import NFCTags
import PN53x
import SecureElementCredential
import Transcript
#if canImport(Glibc)
import Glibc
#endif

// `secbridge transcript show --html`: the timeline page, rendered from the dissector's lines.

extension TranscriptPresenter {
    static func escape(_ s: String) -> String {
        var out = ""
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(c)
            }
        }
        return out
    }

    /// A self-contained page (inline CSS, no script): four lanes (terminal, reader, host, secure
    /// element) and one row per line, an arrow from the sender's lane to the receiver's.
    static func html(_ transcript: Transcript, _ shown: [Shown], title: String) -> String {
        var page = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>
            body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
            table.h td{padding:0 1em 0 0;font-size:90%}
            .lanes,.row{display:grid;grid-template-columns:7em repeat(4,1fr);align-items:start}
            .lanes{position:sticky;top:0;background:#fff;border-bottom:2px solid #999;font-weight:bold;text-align:center;padding:.3em 0}
            .row{border-bottom:1px solid #eee;padding:.25em 0}
            .t{font-family:monospace;color:#666;font-size:85%}
            .msg{font-family:monospace;font-size:85%;padding:.2em .4em;border-radius:4px;overflow-wrap:anywhere}
            .right{background:#e8f0fe;border-right:4px solid #1a73e8}
            .left{background:#e6f4ea;border-left:4px solid #188038}
            .event{background:#fef7e0;grid-column:2 / span 4;text-align:center}
            .comment{color:#777;grid-column:2 / span 4;font-style:italic}
            .fail{background:#fce8e6;border-left:4px solid #d93025}
            .d{font-family:system-ui,sans-serif;color:#444;font-size:90%}
            </style></head><body>
            <h1>\(escape(title))</h1>
            <table class="h">
            """
        for field in transcript.header.fields {
            page += "<tr><td>\(escape(field.key))</td><td>\(escape(field.value))</td></tr>\n"
        }
        page += "</table>\n<div class=\"lanes\"><div>time</div><div>terminal</div><div>reader</div><div>host</div><div>secure element</div></div>\n"
        for s in shown {
            let time = s.record?.offset?.description ?? ""
            let channel = s.record?.channel.map { "@" + $0 + " " } ?? ""
            page += "<div class=\"row\" id=\"l\(s.line)\"><div class=\"t\">\(escape(time))<br>line \(s.line)</div>"
            let details = s.details.map { "<div class=\"d\">\(escape($0))</div>" }.joined()
            if s.record == nil {
                page += "<div class=\"comment\">\(escape(s.text))</div>"
            } else if s.from == .none {
                page += "<div class=\"msg event\">\(escape(channel + s.text))\(details)</div>"
            } else {
                let lo = min(s.from.rawValue, s.to.rawValue), hi = max(s.from.rawValue, s.to.rawValue)
                var cls = s.from.rawValue < s.to.rawValue ? "right" : "left"
                if case .failure? = s.record?.entry { cls = "fail" }
                let arrow = s.from.rawValue < s.to.rawValue ? " →" : "← "
                page += "<div class=\"msg \(cls)\" style=\"grid-column:\(lo + 2) / \(hi + 3)\">\(arrow == "← " ? arrow : "")\(escape(channel + s.text))\(arrow == " →" ? arrow : "")\(details)</div>"
            }
            page += "</div>\n"
        }
        page += "</body></html>\n"
        return page
    }
}
