//! Page-aligned I/O buffer arenas: 1 GiB or 2 MiB hugetlb pages when the
//! administrator reserved them, else anonymous memory with transparent huge
//! pages requested. Anonymous memory (never file-backed) so that io_uring can
//! register it as fixed buffers and CUDA can pin it afterwards.
#![expect(unsafe_code, reason = "mmap, mbind and munmap of the buffer arena")]

use std::fmt;
use std::io;
use std::ptr::NonNull;

use serde::Serialize;
use zerohop_host::HostRoot;

/// What kind of memory backs an arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "&'static str")]
pub enum BufferKind {
    /// Reserved 1 GiB hugetlb pages.
    Hugetlb1g,
    /// Reserved 2 MiB hugetlb pages.
    Hugetlb2m,
    /// Anonymous memory, transparent huge pages requested with madvise.
    Anonymous,
}

impl From<BufferKind> for &'static str {
    fn from(kind: BufferKind) -> &'static str {
        kind.name()
    }
}

impl fmt::Display for BufferKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl BufferKind {
    /// Its name in the JSON document and the summary.
    pub fn name(self) -> &'static str {
        match self {
            BufferKind::Hugetlb1g => "hugetlb1g",
            BufferKind::Hugetlb2m => "hugetlb2m",
            BufferKind::Anonymous => "anonymous",
        }
    }

    fn page_size(self) -> usize {
        match self {
            BufferKind::Hugetlb1g => 1 << 30,
            BufferKind::Hugetlb2m => 2 << 20,
            BufferKind::Anonymous => 4096,
        }
    }

    fn extra_flags(self) -> libc::c_int {
        match self {
            BufferKind::Hugetlb1g => libc::MAP_HUGETLB | libc::MAP_HUGE_1GB,
            BufferKind::Hugetlb2m => libc::MAP_HUGETLB | libc::MAP_HUGE_2MB,
            BufferKind::Anonymous => 0,
        }
    }
}

/// Whether to try hugetlb pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HugePages {
    /// Use reserved hugetlb pages when enough are free, else anonymous memory.
    #[default]
    Auto,
    /// Always use anonymous memory.
    Off,
}

/// A page-aligned, pre-faulted, zeroed block of memory owned by one worker.
#[derive(Debug)]
pub struct Arena {
    ptr: NonNull<u8>,
    len: usize,
    kind: BufferKind,
    numa_node: Option<u32>,
}

// SAFETY: the arena is a plain owned allocation; nothing in it is tied to the
// thread that created it.
unsafe impl Send for Arena {}
// SAFETY: shared access only hands out raw pointers or shared slices; writers
// (the kernel, or `as_mut_slice`) need a `&mut` or go through the raw pointer
// under the engine's slot ownership rules.
unsafe impl Sync for Arena {}

/// A decision taken while allocating, for the run's fallback list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocationNote {
    /// The feature that was not used.
    pub feature: &'static str,
    /// Why.
    pub reason: String,
}

/// Free hugetlb pages of `size_kib` as the host reports them; none when it
/// cannot be read.
fn free_hugepages(root: &HostRoot, size_kib: u64) -> u64 {
    root.read_value(&format!(
        "/sys/kernel/mm/hugepages/hugepages-{size_kib}kB/free_hugepages"
    ))
    .ok()
    .flatten()
    .and_then(|text| text.parse().ok())
    .unwrap_or(0)
}

impl Arena {
    /// Allocates at least `bytes` of page-aligned memory, preferring
    /// hugetlb pages under `policy` when `root` (the host) has enough free,
    /// placed on `numa_node` when given. Every feature that could not be
    /// used is appended to `notes`.
    ///
    /// The hugetlb sizes tried and passed over make one `hugepages` note,
    /// and only when the buffers ended up in 4 KiB pages: a 1 GiB pool
    /// that is not reserved is no news when the 2 MiB pool served, and a
    /// machine without pools would otherwise say it twice on every run.
    pub fn allocate(
        root: &HostRoot,
        bytes: usize,
        policy: HugePages,
        numa_node: Option<u32>,
        notes: &mut Vec<AllocationNote>,
    ) -> io::Result<Arena> {
        let bytes = bytes.max(1);
        let mut passed_over = Vec::new();
        if policy == HugePages::Auto {
            for (kind, kib, label) in [
                (BufferKind::Hugetlb1g, 1u64 << 20, "1 GiB pages"),
                (BufferKind::Hugetlb2m, 2048, "2 MiB pages"),
            ] {
                let needed = bytes.div_ceil(kind.page_size()) as u64;
                let free = free_hugepages(root, kib);
                if free < needed {
                    passed_over.push(format!("{label}: {needed} needed, {free} free"));
                    continue;
                }
                match Arena::map(bytes, kind, numa_node, notes) {
                    Ok(arena) => return Ok(arena),
                    Err(err) => passed_over.push(format!("{label}: mmap failed: {err}")),
                }
            }
        }
        let arena = Arena::map(bytes, BufferKind::Anonymous, numa_node, notes)?;
        if !passed_over.is_empty() {
            notes.push(AllocationNote {
                feature: "hugepages",
                reason: format!(
                    "no reserved hugetlb pool could hold the buffers ({}); 4 KiB pages used",
                    passed_over.join("; ")
                ),
            });
        }
        Ok(arena)
    }

    fn map(
        bytes: usize,
        kind: BufferKind,
        numa_node: Option<u32>,
        notes: &mut Vec<AllocationNote>,
    ) -> io::Result<Arena> {
        let len = bytes.next_multiple_of(kind.page_size());
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | kind.extra_flags();
        // SAFETY: an anonymous private mapping at an address of the kernel's
        // choosing; no existing memory is affected.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(raw.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        let mut arena = Arena {
            ptr,
            len,
            kind,
            numa_node: None,
        };
        if kind == BufferKind::Anonymous {
            // SAFETY: the range is the mapping just created; madvise only
            // changes how the kernel backs it.
            let rc = unsafe { libc::madvise(raw, len, libc::MADV_HUGEPAGE) };
            if rc != 0 {
                notes.push(AllocationNote {
                    feature: "transparent_hugepages",
                    reason: format!(
                        "madvise(MADV_HUGEPAGE) failed: {}",
                        io::Error::last_os_error()
                    ),
                });
            }
        }
        if let Some(node) = numa_node {
            match arena.bind_to_node(node) {
                Ok(()) => arena.numa_node = Some(node),
                Err(err) => notes.push(AllocationNote {
                    feature: "numa_placement",
                    reason: format!("mbind to node {node} failed: {err}"),
                }),
            }
        }
        // Touch every page now, after the NUMA policy is set, so that page
        // faults do not land inside the measured run.
        arena.as_mut_slice().fill(0);
        Ok(arena)
    }

    fn bind_to_node(&self, node: u32) -> io::Result<()> {
        const MPOL_PREFERRED: libc::c_ulong = 1;
        let mut mask = [0u64; 16];
        let word = node as usize / 64;
        if word >= mask.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "node number too large",
            ));
        }
        mask[word] |= 1 << (node % 64);
        // SAFETY: mbind reads `mask` (1024 bits, as `maxnode` says) and
        // changes the policy of our own mapping only.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_mbind,
                self.ptr.as_ptr(),
                self.len,
                MPOL_PREFERRED,
                mask.as_ptr(),
                (mask.len() * 64) as libc::c_ulong,
                0 as libc::c_uint,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The start of the arena.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Its length in bytes (rounded up to the page size).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: an arena has at least one page.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The memory that backs it.
    pub fn kind(&self) -> BufferKind {
        self.kind
    }

    /// The NUMA node its pages are bound to, if any.
    pub fn numa_node(&self) -> Option<u32> {
        self.numa_node
    }

    /// The whole arena as a mutable slice.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` bytes, readable and writable, owned by
        // `self`, and `&mut self` rules out any other access through it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// `len` bytes at `offset`, for reading a slot no I/O is writing into.
    ///
    /// # Panics
    /// If the range is outside the arena (a bug in the caller).
    pub fn slice(&self, offset: usize, len: usize) -> &[u8] {
        assert!(
            offset.checked_add(len).is_some_and(|end| end <= self.len),
            "slot outside arena"
        );
        // SAFETY: the range is inside the mapping (checked above); the engine
        // only reads a slot after its read completed and before it is reused.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(offset), len) }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping created in `map`; nothing refers
        // to it any more (registrations are released by their owners first).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_arenas_are_page_aligned_and_zeroed() {
        let mut notes = Vec::new();
        let mut arena =
            Arena::allocate(&HostRoot::live(), 10_000, HugePages::Off, None, &mut notes).unwrap();
        assert_eq!(arena.kind(), BufferKind::Anonymous);
        assert_eq!(arena.as_ptr() as usize % 4096, 0);
        assert_eq!(arena.len(), 12_288);
        assert!(arena.as_mut_slice().iter().all(|&b| b == 0));
        arena.as_mut_slice()[5000] = 7;
        assert_eq!(arena.slice(5000, 1), &[7]);
    }

    #[test]
    fn auto_explains_once_why_hugetlb_was_not_used() {
        let mut notes = Vec::new();
        let arena = Arena::allocate(
            &HostRoot::live(),
            4 << 20,
            HugePages::Auto,
            None,
            &mut notes,
        )
        .unwrap();
        let hugepage_notes: Vec<_> = notes
            .iter()
            .filter(|n| n.feature.starts_with("hugepages"))
            .collect();
        match arena.kind() {
            BufferKind::Anonymous => {
                assert_eq!(hugepage_notes.len(), 1, "{notes:?}");
                let reason = &hugepage_notes[0].reason;
                assert!(
                    reason.contains("1 GiB pages") && reason.contains("2 MiB pages"),
                    "{reason}"
                );
            }
            // A pool served the buffers: nothing to explain.
            kind => assert!(hugepage_notes.is_empty(), "{kind}: {notes:?}"),
        }
    }

    #[test]
    fn off_says_nothing_about_hugepages() {
        let mut notes = Vec::new();
        Arena::allocate(&HostRoot::live(), 4 << 20, HugePages::Off, None, &mut notes).unwrap();
        assert!(!notes.iter().any(|n| n.feature.starts_with("hugepages")));
    }

    #[test]
    fn kinds_have_the_names_of_the_json_document() {
        for kind in [
            BufferKind::Hugetlb1g,
            BufferKind::Hugetlb2m,
            BufferKind::Anonymous,
        ] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.to_string())
            );
        }
        assert_eq!(BufferKind::Hugetlb2m.to_string(), "hugetlb2m");
    }

    #[test]
    fn numa_placement_on_node_zero_is_applied_or_explained() {
        let mut notes = Vec::new();
        let arena = Arena::allocate(
            &HostRoot::live(),
            1 << 20,
            HugePages::Off,
            Some(0),
            &mut notes,
        )
        .unwrap();
        assert!(
            arena.numa_node() == Some(0) || notes.iter().any(|n| n.feature == "numa_placement")
        );
    }
}
