//! `/proc/modules`: loaded kernel modules and what uses them.

/// One line of `/proc/modules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleLine {
    /// Module name (`mlx5_ib`).
    pub name: String,
    /// Number of references.
    pub refcount: u32,
    /// Modules that depend on this one (`used by`).
    pub used_by: Vec<String>,
    /// `Live`, `Loading` or `Unloading`.
    pub state: String,
}

/// Parses `/proc/modules`; malformed lines are skipped.
pub fn parse_proc_modules(text: &str) -> Vec<ModuleLine> {
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let name = fields.next()?.to_owned();
            let _size = fields.next()?;
            let refcount = fields.next()?.parse().unwrap_or(0);
            let used_by = fields
                .next()?
                .split(',')
                .filter(|m| !m.is_empty() && *m != "-" && *m != "[permanent]")
                .map(str::to_owned)
                .collect();
            let state = fields.next().unwrap_or("Live").to_owned();
            Some(ModuleLine {
                name,
                refcount,
                used_by,
                state,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn used_by_lists() {
        let text = "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n\
                    ib_core 434176 8 nvidia_peermem,rdma_ucm,mlx5_ib, Live 0x0000000000000000\n";
        let mods = parse_proc_modules(text);
        assert_eq!(mods.len(), 2);
        assert!(mods[0].used_by.is_empty());
        assert_eq!(
            mods[1].used_by,
            vec!["nvidia_peermem", "rdma_ucm", "mlx5_ib"]
        );
        assert_eq!(mods[1].refcount, 8);
    }

    proptest! {
        #[test]
        fn never_panics(text in "(?s).{0,300}") {
            let _ = parse_proc_modules(&text);
        }
    }
}
