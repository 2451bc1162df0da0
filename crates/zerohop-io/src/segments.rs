//! Whether the block layer will split each O_DIRECT read in several
//! requests because the buffer is made of more pages than the device takes
//! segments per request.
//!
//! Each physically contiguous piece of a buffer is one segment. Buffers of
//! 4 KiB pages need `block size / 4096` of them, and a read that needs more
//! than the device's `queue/max_segments` is split. Measured on virtio-blk
//! (254 segments), 1 MiB reads at qd 32: about 1,100 MiB/s from 4 KiB pages
//! against 2,700 MiB/s from transparent huge pages, for zerohop and fio alike
//! (BENCHMARKS.md).

use crate::buffers::BufferKind;
use crate::report::Fallback;
use crate::target::DeviceInfo;
use crate::units::format_bytes;

/// The page size of anonymous memory without huge pages.
const SMALL_PAGE: u64 = 4096;

/// Explains why the reads are split, when they are: O_DIRECT reads into
/// anonymous buffers while transparent huge pages are off (`thp` is the
/// bracketed mode of `/sys/kernel/mm/transparent_hugepage/enabled`), with a
/// block size needing more segments than some device takes.
///
/// With THP at `madvise` or `always` the buffers usually get huge pages,
/// but not certainly (memory may be too fragmented); that case is not
/// reported, as it cannot be told without reading the process's page maps.
pub fn split_reads<'d>(
    direct: bool,
    block_size: u64,
    buffers: Option<BufferKind>,
    thp: Option<&str>,
    devices: impl IntoIterator<Item = &'d DeviceInfo>,
) -> Option<Fallback> {
    if !direct || buffers != Some(BufferKind::Anonymous) || thp != Some("never") {
        return None;
    }
    let pages = block_size.div_ceil(SMALL_PAGE);
    let (name, max) = devices
        .into_iter()
        .filter_map(|d| Some((d.name.as_deref().unwrap_or("the device"), d.max_segments?)))
        .filter(|&(_, max)| pages > max)
        .min_by_key(|&(_, max)| max)?;
    Some(Fallback {
        feature: "transparent_hugepages".to_owned(),
        reason: format!(
            "transparent huge pages are off (`never`), so the buffers are 4 KiB pages: each {} read spans {pages} pages, more than the {max} segments {name} takes per request, and the block layer splits it in {}; reserve 2 MiB hugetlb pages (vm.nr_hugepages) or set transparent_hugepage to madvise",
            format_bytes(block_size as f64),
            pages.div_ceil(max),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn virtio(max_segments: Option<u64>) -> DeviceInfo {
        DeviceInfo {
            name: Some("vda".into()),
            logical_block_size: Some(512),
            numa_node: None,
            max_segments,
        }
    }

    #[test]
    fn a_1m_read_from_small_pages_is_split_on_virtio_blk() {
        let device = virtio(Some(254));
        let note = split_reads(
            true,
            1 << 20,
            Some(BufferKind::Anonymous),
            Some("never"),
            [&device],
        )
        .expect("256 pages exceed 254 segments");
        assert_eq!(note.feature, "transparent_hugepages");
        assert!(note.reason.contains("256 pages"), "{}", note.reason);
        assert!(note.reason.contains("254 segments vda"), "{}", note.reason);
        assert!(note.reason.contains("splits it in 2"), "{}", note.reason);
    }

    #[test]
    fn no_note_when_the_reads_fit_or_cannot_be_judged() {
        let device = virtio(Some(254));
        let split = |direct, bs, kind, thp: &str, device: &DeviceInfo| {
            split_reads(direct, bs, kind, Some(thp), [device]).is_some()
        };
        let anon = Some(BufferKind::Anonymous);
        // 254 pages fit in 254 segments.
        assert!(!split(true, 254 * 4096, anon, "never", &device));
        // Huge pages are one segment per 2 MiB.
        assert!(!split(
            true,
            1 << 20,
            Some(BufferKind::Hugetlb2m),
            "never",
            &device
        ));
        assert!(!split(true, 1 << 20, anon, "madvise", &device));
        // Buffered reads go through the page cache, not these buffers.
        assert!(!split(false, 1 << 20, anon, "never", &device));
        // A device that does not say is not judged.
        assert!(!split(true, 1 << 20, anon, "never", &virtio(None)));
    }
}
