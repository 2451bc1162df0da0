//! Self-contained HTML pages and the one escaping function every page and
//! drawing uses.
//!
//! A page is one file with its style inline and nothing to fetch: its
//! Content-Security-Policy forbids every load (scripts, images, fonts,
//! frames, connections), so even text that slipped through unescaped could
//! make no request. It is attached to a ticket and opened anywhere,
//! offline.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::render::printable::printable;

/// `text` made safe as HTML or SVG/XML character data and as a quoted
/// attribute value: control characters first become visible escapes (as
/// on a terminal, [`printable`]; XML forbids most of them), then `&`, `<`,
/// `>`, `"` and `'` become entities. Every string from a host, a capture
/// or the cluster goes through here before it reaches a page.
pub fn escape(text: &str) -> Cow<'_, str> {
    let visible = printable(text);
    if !visible.contains(['&', '<', '>', '"', '\'']) {
        return visible;
    }
    let mut out = String::with_capacity(visible.len() + 16);
    for c in visible.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// The policy of every page: nothing may load but the page's own inline
/// style. An `<img>` or `<link>` an attacker managed to inject would still
/// fetch nothing.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/// The style shared by every page: system fonts only, wrapping long words
/// (commands, paths) instead of widening the page.
const STYLE: &str = r#"
:root { color-scheme: light; --fail: #b3261e; --warn: #9a5b00; --ok: #1e6b35; --unknown: #5f5f72; --line: #d6d6de; }
* { box-sizing: border-box; }
body { margin: 0 auto; padding: 24px 32px 48px; max-width: 1600px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: #1b1b22; background: #fff; }
h1 { font-size: 22px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 16px 0 6px; overflow-wrap: anywhere; }
p, li, td, th, dd, dt, summary { overflow-wrap: anywhere; }
code, pre { font: 12.5px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f4f4f8; padding: 6px 8px; margin: 4px 0; border-radius: 4px; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
th, td { text-align: left; vertical-align: top; padding: 4px 8px; border-bottom: 1px solid var(--line); }
th { background: #f4f4f8; font-weight: 600; }
dl.identity { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 8px 0 0; }
dl.identity dt { color: #55556a; }
dl.identity dd { margin: 0; }
.status { display: inline-block; min-width: 5.5em; font-weight: 600; }
.fail, .NotReady { color: var(--fail); }
.warn, .Stale { color: var(--warn); }
.pass, .Ready { color: var(--ok); }
.unknown, .blocked, .not-applicable, .info, .Unknown, .NoAgent { color: var(--unknown); }
.verdict { font-size: 18px; font-weight: 700; margin: 12px 0; }
ol.plan > li { margin: 6px 0; }
details { margin: 6px 0; border: 1px solid var(--line); border-radius: 4px; padding: 4px 10px; }
details > summary { cursor: pointer; font-weight: 600; }
.finding { margin: 8px 0 10px; }
.subjects { color: #40404f; }
.drawing { border: 1px solid var(--line); border-radius: 4px; padding: 8px; margin: 8px 0; }
.drawing svg { display: block; width: 100%; height: auto; }
.muted { color: #55556a; }
"#;

/// A whole page: `title` (escaped here) and `body`, HTML this module's
/// callers built with [`escape`] around every outside string.
pub fn page(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + STYLE.len() + 512);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CONTENT_SECURITY_POLICY}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_become_entities() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"y\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;"
        );
    }

    #[test]
    fn plain_text_is_borrowed_and_controls_become_visible() {
        assert!(matches!(escape("mlx5_0 port 1"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}]0;x\u{7}<"), "a\\x1b]0;x\\x07&lt;");
    }

    #[test]
    fn a_page_forbids_every_load_and_escapes_its_title() {
        let page = page("<b>host</b>", "<p>body</p>\n");
        assert!(page.contains("default-src 'none'"));
        assert!(page.contains("<title>&lt;b&gt;host&lt;/b&gt;</title>"));
        assert!(!page.contains("<script"));
    }
}
