//! Kernel command line values.

/// Checks a CPU list as the kernel prints and takes it (`0-3,8,10-11`,
/// `cpulist_parse()`): comma-separated CPU numbers and ascending ranges.
pub(crate) fn cpu_list(list: &str) -> Result<(), String> {
    let number = |s: &str| {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<u32>().ok())
            .flatten()
    };
    let ok = !list.is_empty()
        && list.split(',').all(|part| match part.split_once('-') {
            Some((a, b)) => matches!((number(a), number(b)), (Some(a), Some(b)) if a <= b),
            None => number(part).is_some(),
        });
    if ok {
        Ok(())
    } else {
        Err("is not a cpu list".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(cpu_list("0-3,8,10-11"), Ok(()));
        for bad in ["", "3-0", "0-3,", "+1", "0 -3", "1;reboot"] {
            assert!(cpu_list(bad).is_err(), "{bad:?}");
        }
    }
}
