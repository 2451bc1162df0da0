//! A page as a person sees it: Debian's `chromium`, headless, driven by
//! its command line (no DevTools client to build or keep).
//!
//! [`look`] loads the page unmodified in an `<iframe>` of a harness page
//! at a desktop width; a script in the harness (the page itself has none
//! and its policy forbids any) reads the laid-out boxes of the page's
//! elements and writes what it found into the harness, which
//! `--dump-dom` prints. The same run records chromium's NetLog: every
//! request the network stack saw. [`screenshot`] takes a picture of the
//! page at the same width.

#![allow(
    dead_code,
    reason = "each test binary uses a different part of the support module"
)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The desktop width the pages are laid out at.
pub const WIDTH: u32 = 1366;

/// The browser, or `None` (with a printed reason) on a machine without
/// it; CI installs it (`.ci/run`) and must not skip.
pub fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("chromium"))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing: CI installs Debian's chromium package and must not skip the browser tests"
        );
        eprintln!("skipped: no chromium on PATH (apt-get install chromium)");
    }
    found
}

/// What the browser saw of one page.
#[derive(Debug)]
pub struct Look {
    /// The script's findings, as JSON.
    pub result: serde_json::Value,
    /// The NetLog chromium wrote during the load.
    pub netlog: String,
}

impl Look {
    /// The URLs the page asked the network for: every request job whose
    /// network isolation key is the page's site (`file://`). Chromium's
    /// own traffic (its clock, its updater) has another key and is not the
    /// page's doing.
    pub fn requests(&self) -> Vec<String> {
        let log: serde_json::Value = serde_json::from_str(&self.netlog)
            .or_else(|_| {
                serde_json::from_str(&format!(
                    "{}]}}",
                    self.netlog.trim_end().trim_end_matches(',')
                ))
            })
            .unwrap_or_else(|err| panic!("the NetLog is not JSON ({err})"));
        let start = &log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"];
        let mut urls: Vec<String> = Vec::new();
        for event in log["events"].as_array().into_iter().flatten() {
            let params = &event["params"];
            let key = params["network_isolation_key"].as_str().unwrap_or_default();
            if event["type"] == *start && key.starts_with("file://") {
                let url = params["url"].as_str().unwrap_or_default().to_owned();
                if !url.starts_with("file:") && !urls.contains(&url) {
                    urls.push(url);
                }
            }
        }
        urls
    }

    /// A string list of the result.
    pub fn list(&self, key: &str) -> Vec<String> {
        self.result[key]
            .as_array()
            .unwrap_or_else(|| panic!("no {key} in {}", self.result))
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect()
    }
}

/// The flags of every run: no sandbox (CI runs as root), no background
/// traffic of chromium's own, so that a request in the NetLog is the
/// page's.
fn base(browser: &Path, profile: &Path) -> Command {
    let mut command = Command::new(browser);
    command
        .arg("--headless")
        .arg("--no-sandbox")
        .arg("--disable-gpu")
        .arg("--no-first-run")
        .arg("--disable-background-networking")
        .arg("--disable-component-update")
        .arg("--disable-sync")
        .arg("--disable-default-apps")
        .arg("--disable-extensions")
        .arg("--hide-scrollbars")
        .arg(format!("--user-data-dir={}", profile.display()))
        .env("HOME", profile);
    command
}

/// The measuring script: boxes of the page's elements at [`WIDTH`].
const MEASURE: &str = r#"
window.addEventListener('load', function () {
  var out = {};
  try {
    var frame = document.getElementById('page');
    var d = frame.contentDocument, w = frame.contentWindow;
    var vw = w.innerWidth;
    out.viewport = vw;
    out.scroll_width = d.documentElement.scrollWidth;
    out.scripts = d.querySelectorAll('script').length;
    out.text = d.body.innerText;
    var describe = function (e) { return e.tagName.toLowerCase() + ': ' + (e.textContent || '').trim().slice(0, 80); };
    // Elements that reach past the viewport.
    out.outside = [];
    d.body.querySelectorAll('*').forEach(function (e) {
      var r = e.getBoundingClientRect();
      if (r.width > 0 && (r.right > vw + 0.5 || r.left < -0.5)) out.outside.push(describe(e));
    });
    // Blocks whose content is wider than the block.
    out.clipped = [];
    d.body.querySelectorAll('h1,h2,h3,p,li,dd,dt,td,th,pre,summary,div').forEach(function (e) {
      if (e.scrollWidth > e.clientWidth + 1) out.clipped.push(describe(e));
    });
    // The drawing: no two texts overlap, every box text inside its box,
    // no two boxes overlap.
    var overlap = function (a, b, slack) {
      return a.left < b.right - slack && b.left < a.right - slack && a.top < b.bottom - slack && b.top < a.bottom - slack;
    };
    var texts = Array.prototype.slice.call(d.querySelectorAll('svg text'));
    var rects = texts.map(function (t) { return t.getBoundingClientRect(); });
    out.svg_texts = texts.length;
    out.text_overlaps = [];
    for (var i = 0; i < rects.length; i++)
      for (var j = i + 1; j < rects.length; j++)
        if (overlap(rects[i], rects[j], 0.5)) out.text_overlaps.push(texts[i].textContent + ' / ' + texts[j].textContent);
    out.text_outside_box = [];
    out.boxes = [];
    var boxes = [];
    d.querySelectorAll('svg g[data-key]').forEach(function (g) {
      var all = g.querySelectorAll('rect');
      var box = all[all.length - 1].getBoundingClientRect();
      boxes.push({ key: g.getAttribute('data-key'), r: box });
      out.boxes.push(g.getAttribute('class') + ' ' + g.getAttribute('data-key'));
      g.querySelectorAll('text').forEach(function (t) {
        var r = t.getBoundingClientRect();
        if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
          out.text_outside_box.push(t.textContent);
      });
    });
    out.box_overlaps = [];
    for (var a = 0; a < boxes.length; a++)
      for (var b = a + 1; b < boxes.length; b++)
        if (overlap(boxes[a].r, boxes[b].r, 0.5)) out.box_overlaps.push(boxes[a].key + ' / ' + boxes[b].key);
    var svg = d.querySelector('svg');
    if (svg) {
      var s = svg.getBoundingClientRect();
      out.svg_width = s.width;
      out.text_outside_svg = rects.filter(function (r) { return r.left < s.left - 0.5 || r.right > s.right + 0.5; }).length;
    }
  } catch (err) {
    out.error = String(err);
  }
  document.getElementById('result').textContent = JSON.stringify(out);
});
"#;

/// Loads `page` (an HTML file) at [`WIDTH`] and measures it.
pub fn look(browser: &Path, page: &Path) -> Look {
    let dir = tempfile::tempdir().unwrap();
    let name = page.file_name().unwrap().to_str().unwrap();
    let copy = dir.path().join(name);
    fs::copy(page, &copy).unwrap();
    let harness = dir.path().join("harness.html");
    fs::write(
        &harness,
        format!(
            "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"page\" src=\"{name}\" style=\"border:0;width:{WIDTH}px;height:900px\"></iframe><pre id=\"result\"></pre><script>{MEASURE}</script></body></html>"
        ),
    )
    .unwrap();
    let netlog = dir.path().join("netlog.json");
    let profile = dir.path().join("profile");
    let out = base(browser, &profile)
        .arg("--allow-file-access-from-files")
        .arg(format!("--log-net-log={}", netlog.display()))
        .arg("--net-log-capture-mode=Everything")
        .arg(format!("--window-size={},900", WIDTH + 40))
        .arg("--virtual-time-budget=5000")
        .arg("--dump-dom")
        .arg(&harness)
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let result = dom
        .split("<pre id=\"result\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "no result in the dumped DOM: {dom}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let json = unescape(result);
    let result: serde_json::Value = serde_json::from_str(&json)
        .unwrap_or_else(|err| panic!("{err}: {json}\n{}", String::from_utf8_lossy(&out.stderr)));
    assert!(result.get("error").is_none(), "the script failed: {result}");
    Look {
        result,
        netlog: fs::read_to_string(&netlog).unwrap_or_default(),
    }
}

/// A screenshot of `page` at [`WIDTH`] × `height`, written to `png`.
pub fn screenshot(browser: &Path, page: &Path, png: &Path, height: u32) {
    let dir = tempfile::tempdir().unwrap();
    let out = base(browser, &dir.path().join("profile"))
        .arg(format!("--window-size={WIDTH},{height}"))
        .arg(format!("--screenshot={}", png.display()))
        .arg(page)
        .output()
        .expect("chromium runs");
    assert!(
        png.is_file(),
        "no screenshot: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The width and height of a PNG, from its header.
pub fn png_size(png: &Path) -> (u32, u32) {
    let bytes = fs::read(png).unwrap();
    assert_eq!(&bytes[1..4], b"PNG", "{} is not a PNG", png.display());
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

/// The dumped DOM's text as it was before serialisation escaped it.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}
