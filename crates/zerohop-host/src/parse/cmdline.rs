//! `/proc/cmdline`: the kernel's boot parameters.

/// The kernel command line, as whole tokens in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Cmdline {
    /// Each parameter as `(key, value)`; flags such as `quiet` have no value.
    pub params: Vec<(String, Option<String>)>,
}

impl Cmdline {
    /// Splits a command line on whitespace outside double quotes, as the
    /// kernel does; quotes around a value (`key="a b"`) are removed.
    pub fn parse(text: &str) -> Cmdline {
        let mut params = Vec::new();
        let mut token = String::new();
        let mut quoted = false;
        for ch in text.chars() {
            match ch {
                '"' => quoted = !quoted,
                c if c.is_whitespace() && !quoted => {
                    push_token(&mut params, &mut token);
                }
                c => token.push(c),
            }
        }
        push_token(&mut params, &mut token);
        Cmdline { params }
    }

    /// The value of the last `key=value` (the kernel lets the last one win).
    /// `Some(None)` when `key` appears only as a flag.
    pub fn get(&self, key: &str) -> Option<Option<&str>> {
        self.params
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_deref())
    }

    /// The value of the last `key=value`, ignoring bare flags.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.get(key).flatten()
    }

    /// Every value given for `key`, in order (for repeatable parameters
    /// such as `hugepagesz=`).
    pub fn values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.params
            .iter()
            .filter(move |(k, _)| k == key)
            .filter_map(|(_, v)| v.as_deref())
    }

    /// Whether `key` appears at all, as a flag or with a value.
    pub fn has(&self, key: &str) -> bool {
        self.params.iter().any(|(k, _)| k == key)
    }

    /// The parameters named by `keys`, in their order on the command line,
    /// as `key=value` (or `key`) joined by spaces: the order is part of
    /// their meaning where one parameter applies to the one before it
    /// (`hugepages=` to the preceding `hugepagesz=`).
    pub fn show_in_order(&self, keys: &[&str]) -> String {
        self.params
            .iter()
            .filter(|(key, _)| keys.contains(&key.as_str()))
            .map(|(key, value)| match value {
                Some(value) => format!("{key}={value}"),
                None => key.clone(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The parameter exactly as written, for evidence: `key=value` or `key`.
    pub fn show(&self, key: &str) -> Option<String> {
        self.get(key).map(|value| match value {
            Some(value) => format!("{key}={value}"),
            None => key.to_owned(),
        })
    }
}

fn push_token(params: &mut Vec<(String, Option<String>)>, token: &mut String) {
    if token.is_empty() {
        return;
    }
    let taken = std::mem::take(token);
    match taken.split_once('=') {
        Some((key, value)) => params.push((key.to_owned(), Some(value.to_owned()))),
        None => params.push((taken, None)),
    }
}

/// One hugepage pool requested on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HugepageRequest {
    /// Page size in KiB.
    pub size_kib: u64,
    /// Pages requested in total.
    pub pages: u64,
    /// Pages requested per NUMA node (`hugepages=0:16,1:16`), when given so.
    pub per_node: Vec<(u32, u64)>,
}

/// The hugepage pools requested at boot, in the kernel's reading order:
/// `hugepages=` applies to the last `hugepagesz=` before it, or to
/// `default_hugepagesz=` (else the architecture's default, 2 MiB here).
pub fn hugepage_requests(cmdline: &Cmdline) -> Vec<HugepageRequest> {
    let default_size = cmdline
        .value("default_hugepagesz")
        .and_then(parse_size_kib)
        .unwrap_or(2048);
    let mut current = default_size;
    let mut requests: Vec<HugepageRequest> = Vec::new();
    for (key, value) in &cmdline.params {
        let Some(value) = value else { continue };
        match key.as_str() {
            "hugepagesz" => current = parse_size_kib(value).unwrap_or(current),
            "hugepages" => {
                let (pages, per_node) = parse_hugepage_count(value);
                requests.retain(|r| r.size_kib != current);
                requests.push(HugepageRequest {
                    size_kib: current,
                    pages,
                    per_node,
                });
            }
            _ => {}
        }
    }
    requests
}

/// Parses `1G`, `2M`, `1048576k` (and plain bytes) into KiB.
pub fn parse_size_kib(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let number: u64 = digits.parse().ok()?;
    let factor: u64 = match unit.to_ascii_lowercase().as_str() {
        "" => return Some(number / 1024),
        "k" | "kb" => 1,
        "m" | "mb" => 1 << 10,
        "g" | "gb" => 1 << 20,
        _ => return None,
    };
    number.checked_mul(factor)
}

fn parse_hugepage_count(value: &str) -> (u64, Vec<(u32, u64)>) {
    if !value.contains(':') {
        return (value.parse().unwrap_or(0), Vec::new());
    }
    let per_node: Vec<(u32, u64)> = value
        .split(',')
        .filter_map(|part| {
            let (node, count) = part.split_once(':')?;
            Some((node.trim().parse().ok()?, count.trim().parse().ok()?))
        })
        .collect();
    let total = per_node
        .iter()
        .map(|(_, n)| *n)
        .fold(0u64, u64::saturating_add);
    (total, per_node)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn last_value_wins_and_flags_have_no_value() {
        let c = Cmdline::parse("BOOT_IMAGE=/vmlinuz ro iommu=off quiet iommu=pt intel_iommu=on\n");
        assert_eq!(c.value("iommu"), Some("pt"));
        assert_eq!(c.get("quiet"), Some(None));
        assert_eq!(c.get("intel_iommu"), Some(Some("on")));
        // Whole tokens only: `iommu` must not match `intel_iommu`.
        assert_eq!(Cmdline::parse("intel_iommu=on").get("iommu"), None);
    }

    #[test]
    fn quotes_keep_spaces() {
        let c = Cmdline::parse(r#"dyndbg="file x.c +p" ro"#);
        assert_eq!(c.value("dyndbg"), Some("file x.c +p"));
        assert!(c.has("ro"));
    }

    #[test]
    fn hugepage_parameters_are_shown_in_their_order() {
        // The CSIT Grace testbed's command line (FDio/csit): each
        // `hugepages=` belongs to the `hugepagesz=` before it, so the pairs
        // must stay together.
        let c = Cmdline::parse(
            "ro audit=0 default_hugepagesz=2M hugepagesz=1G hugepages=32 hugepagesz=2M hugepages=32768 iommu.passthrough=1",
        );
        assert_eq!(
            c.show_in_order(&["default_hugepagesz", "hugepagesz", "hugepages"]),
            "default_hugepagesz=2M hugepagesz=1G hugepages=32 hugepagesz=2M hugepages=32768"
        );
        assert_eq!(c.show_in_order(&["nohz_full"]), "");
    }

    #[test]
    fn hugepages_follow_their_size() {
        let c = Cmdline::parse(
            "default_hugepagesz=2M hugepagesz=1G hugepages=32 hugepagesz=2M hugepages=1024",
        );
        let r = hugepage_requests(&c);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].size_kib, r[0].pages), (1 << 20, 32));
        assert_eq!((r[1].size_kib, r[1].pages), (2048, 1024));

        let c = Cmdline::parse("default_hugepagesz=1G hugepages=0:8,1:8");
        let r = hugepage_requests(&c);
        assert_eq!(r[0].size_kib, 1 << 20);
        assert_eq!(r[0].pages, 16);
        assert_eq!(r[0].per_node, vec![(0, 8), (1, 8)]);
    }

    proptest! {
        #[test]
        fn never_panics(text in ".{0,400}") {
            let c = Cmdline::parse(&text);
            let _ = hugepage_requests(&c);
            let _ = parse_size_kib(&text);
        }
    }
}
