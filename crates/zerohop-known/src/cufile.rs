//! The `cufile.json` schema: every key libcufile reads, its type and
//! allowed values, the keys renamed, and one judgement of a document
//! against it that the doctor (GDS002) and the linter (ZL081) both give.
//!
//! The document itself is parsed by the caller (serde_json in the doctor,
//! the span-keeping YAML loader in the linter) and walked here through
//! [`Tree`], so that the two commands cannot disagree on a key.

use crate::suggest;

/// The type libcufile expects of a key's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// `true` or `false`.
    Bool,
    /// A whole number.
    Integer,
    /// A string.
    String,
    /// A list of strings (addresses, driver names, routing orders).
    Strings,
    /// A list of whole numbers (slab sizes and counts).
    Integers,
    /// A section of further keys.
    Section,
}

impl Type {
    /// How the type reads in a message: `a boolean`, `a list of strings`.
    pub fn describe(self) -> &'static str {
        match self {
            Type::Bool => "a boolean",
            Type::Integer => "an integer",
            Type::String => "a string",
            Type::Strings => "a list of strings",
            Type::Integers => "a list of integers",
            Type::Section => "an object",
        }
    }
}

/// A key of `cufile.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    /// The dotted path; `*` stands for any one key (a mount point in
    /// `mount_table`).
    pub path: &'static str,
    /// The type of its value.
    pub ty: Type,
    /// The values allowed for a string, or for each item of a list of
    /// strings; empty when any is.
    pub allowed: &'static [&'static str],
    /// The smallest and largest value of an integer, or of each item of a
    /// list of integers: [`COUNT`] unless the key says otherwise.
    pub range: (i64, i64),
}

/// The range of an integer key that counts or sizes something (threads,
/// queue entries, KiB, milliseconds): a negative value is a mistake.
pub const COUNT: (i64, i64) = (0, i64::MAX);

/// The name of the keys that list the local addresses whose NICs cuFile
/// uses for RDMA, under `properties` and under each file system and mount
/// table entry: the doctor (GDS002) judges every such list.
pub const RDMA_DEV_ADDR_LIST: &str = "rdma_dev_addr_list";

const fn key(path: &'static str, ty: Type) -> Key {
    Key {
        path,
        ty,
        allowed: &[],
        range: COUNT,
    }
}

const fn one_of(path: &'static str, ty: Type, allowed: &'static [&'static str]) -> Key {
    Key {
        path,
        ty,
        allowed,
        range: COUNT,
    }
}

const fn between(path: &'static str, min: i64, max: i64) -> Key {
    Key {
        path,
        ty: Type::Integer,
        allowed: &[],
        range: (min, max),
    }
}

use Type::{Bool, Integer, Integers, Section, String as Text, Strings};

/// The keys libcufile reads, with their types.
///
/// Sources: the `cufile.json` NVIDIA documents in the GPUDirect Storage
/// Benchmarking and Configuration Guide ("JSON schema", GDS 1.14 era: the
/// types are those of the values it shows, `logging.level`'s values are
/// those its comment lists) and ships as
/// `/usr/local/cuda/gds/cufile.json` (CUDA 11.4 to 12.x, with the
/// commented-out `rdma_dc_key`, `rdma_access_mask`, `mount_table`
/// blocks); the keys `gdscheck -p` prints under `CUFILE CONFIGURATION`
/// (GDS 1.0 and 1.14 captures in `../shared/corpus`); and the key list of
/// NVIDIA/MagnumIO gds-diag `checks/cufile_config.py`
/// (`properties.rdma_peer_type`, `properties.prefer_iouring`,
/// `block.nvmeof.use_pci_p2pdma`). A block named `nvfs` (seen in a widely
/// copied guide) is not among them. The ranges are the guide's comments
/// (`cufile_stats` "level(0-3)", `max_file_size_mb` "-1 = no limit");
/// every other integer counts or sizes something and is at least 0.
pub const KEYS: &[Key] = &[
    key("logging", Section),
    key("logging.dir", Text),
    one_of(
        "logging.level",
        Text,
        &["NOTICE", "ERROR", "WARN", "INFO", "DEBUG", "TRACE"],
    ),
    // "max log file size in MB (default: 32, -1 = no limit)".
    between("logging.max_file_size_mb", -1, i64::MAX),
    key("profile", Section),
    key("profile.nvtx", Bool),
    // "cufile stats level(0-3)".
    between("profile.cufile_stats", 0, 3),
    key("execution", Section),
    key("execution.max_io_queue_depth", Integer),
    key("execution.max_io_threads", Integer),
    key("execution.parallel_io", Bool),
    key("execution.min_io_threshold_size_kb", Integer),
    key("execution.max_request_parallelism", Integer),
    key("properties", Section),
    key("properties.gpu_bounce_buffer_slab_config", Section),
    key(
        "properties.gpu_bounce_buffer_slab_config.slab_size_kb",
        Integers,
    ),
    key(
        "properties.gpu_bounce_buffer_slab_config.slab_count",
        Integers,
    ),
    key("properties.max_direct_io_size_kb", Integer),
    key("properties.max_device_cache_size_kb", Integer),
    key("properties.per_buffer_cache_size_kb", Integer),
    key("properties.max_device_pinned_mem_size_kb", Integer),
    key("properties.posix_pool_slab_size_kb", Integers),
    key("properties.posix_pool_slab_count", Integers),
    key("properties.use_poll_mode", Bool),
    key("properties.poll_mode_max_size_kb", Integer),
    key("properties.use_pci_p2pdma", Bool),
    key("properties.allow_compat_mode", Bool),
    key("properties.force_compat_mode", Bool),
    key("properties.force_odirect_mode", Bool),
    key("properties.prefer_iouring", Bool),
    key("properties.gds_rdma_write_support", Bool),
    key("properties.io_batchsize", Integer),
    key("properties.max_batch_io_size", Integer),
    key("properties.max_batch_io_timeout_msecs", Integer),
    key("properties.io_priority", Text),
    key("properties.rdma_dev_addr_list", Strings),
    key("properties.rdma_load_balancing_policy", Text),
    key("properties.rdma_peer_affinity_policy", Text),
    key("properties.rdma_peer_type", Text),
    key("properties.rdma_dc_key", Text),
    key("properties.rdma_access_mask", Text),
    key("properties.rdma_dynamic_routing", Bool),
    one_of(
        "properties.rdma_dynamic_routing_order",
        Strings,
        &["GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P"],
    ),
    key("fs", Section),
    key("fs.generic", Section),
    key("fs.generic.posix_unaligned_writes", Bool),
    key("fs.lustre", Section),
    key("fs.lustre.posix_gds_min_kb", Integer),
    key("fs.lustre.rdma_dev_addr_list", Strings),
    key("fs.lustre.mount_table", Section),
    key("fs.lustre.mount_table.*", Section),
    key("fs.lustre.mount_table.*.rdma_dev_addr_list", Strings),
    key("fs.beegfs", Section),
    key("fs.beegfs.posix_gds_min_kb", Integer),
    key("fs.beegfs.rdma_dev_addr_list", Strings),
    key("fs.beegfs.mount_table", Section),
    key("fs.beegfs.mount_table.*", Section),
    key("fs.beegfs.mount_table.*.rdma_dev_addr_list", Strings),
    key("fs.scatefs", Section),
    key("fs.scatefs.posix_gds_min_kb", Integer),
    key("fs.nfs", Section),
    key("fs.nfs.use_pci_p2pdma", Bool),
    key("fs.nfs.rdma_dev_addr_list", Strings),
    key("fs.nfs.mount_table", Section),
    key("fs.nfs.mount_table.*", Section),
    key("fs.nfs.mount_table.*.rdma_dev_addr_list", Strings),
    key("fs.gpfs", Section),
    key("fs.gpfs.gds_write_support", Bool),
    key("fs.gpfs.gds_async_support", Bool),
    key("fs.gpfs.rdma_dev_addr_list", Strings),
    key("fs.gpfs.mount_table", Section),
    key("fs.gpfs.mount_table.*", Section),
    key("fs.gpfs.mount_table.*.rdma_dev_addr_list", Strings),
    key("fs.weka", Section),
    key("fs.weka.rdma_write_support", Bool),
    key("block", Section),
    key("block.nvme", Section),
    key("block.nvme.use_pci_p2pdma", Bool),
    key("block.nvmeof", Section),
    key("block.nvmeof.use_pci_p2pdma", Bool),
    key("block.raid", Section),
    key("block.raid.use_pci_p2pdma", Bool),
    key("denylist", Section),
    key("denylist.drivers", Strings),
    key("denylist.devices", Strings),
    key("denylist.mounts", Strings),
    key("denylist.filesystems", Strings),
    key("miscellaneous", Section),
    key("miscellaneous.api_check_aggressive", Bool),
    key("miscellaneous.enable_static_routing", Bool),
    key("miscellaneous.static_routing_filepath", Text),
];

/// Lists that pair up item by item: "slab_count defines the number of
/// buffers for each corresponding size" (the guide's comment on
/// `gpu_bounce_buffer_slab_config`; the POSIX pool's lists work the same
/// way). Lists of different lengths leave sizes without a count.
pub const PAIRED: &[(&str, &str)] = &[
    (
        "properties.gpu_bounce_buffer_slab_config.slab_size_kb",
        "properties.gpu_bounce_buffer_slab_config.slab_count",
    ),
    (
        "properties.posix_pool_slab_size_kb",
        "properties.posix_pool_slab_count",
    ),
];

/// Keys under an old name: (old dotted path, the key it became).
///
/// `blacklist` is the section's name in configurations written for early
/// GDS releases and still copied from them; every `cufile.json` NVIDIA
/// documents today (the guide's "JSON schema", the file CUDA 12 ships)
/// names it `denylist`, with the same four lists.
pub const RENAMED: &[(&str, &str)] = &[("blacklist", "denylist")];

/// Names `gdscheck -p` prints under `CUFILE CONFIGURATION` that differ from
/// the JSON key it reads: (printed, key in `cufile.json`). Seen in the GDS
/// 1.0 and 1.14 captures of `../shared/corpus`.
pub const GDSCHECK_ALIASES: &[(&str, &str)] =
    &[("properties.use_compat_mode", "properties.allow_compat_mode")];

/// The key at the dotted `path` (split into its parts), if libcufile reads it.
pub fn lookup(path: &[&str]) -> Option<&'static Key> {
    KEYS.iter().find(|known| matches(known.path, path))
}

fn matches(pattern: &str, path: &[&str]) -> bool {
    pattern.split('.').count() == path.len()
        && pattern
            .split('.')
            .zip(path)
            .all(|(want, have)| want == "*" || want == *have)
}

/// The key a key printed by `gdscheck -p` stands for.
pub fn from_gdscheck(printed: &str) -> &str {
    GDSCHECK_ALIASES
        .iter()
        .find(|(shown, _)| *shown == printed)
        .map_or(printed, |(_, json)| json)
}

/// Whether a document is a `cufile.json` by its content, whatever the file
/// is called: an object without Kubernetes' `apiVersion`/`kind` that has at
/// least two of cuFile's top-level sections (`logging`, `profile`,
/// `execution`, `properties`, `fs`, `denylist`, ...; an old name such as
/// `blacklist` counts), or one section other than `logging` holding a key
/// libcufile reads there (`properties.allow_compat_mode`). `logging` alone
/// is too common in other programs' configurations to tell.
pub fn looks_like_cufile<'a, T: Tree<'a>>(root: T) -> bool {
    if root.shape() != Shape::Object {
        return false;
    }
    let members = root.members();
    if members
        .iter()
        .any(|(key, _, _)| matches!(*key, "apiVersion" | "kind"))
    {
        return false;
    }
    let section = |key: &str| {
        let key = RENAMED
            .iter()
            .find(|(old, _)| *old == key)
            .map_or(key, |(_, new)| new);
        lookup(&[key])
            .filter(|known| known.ty == Type::Section)
            .map(|known| known.path)
    };
    let mut sections = 0;
    for (key, value, _) in &members {
        let Some(name) = section(key) else {
            continue;
        };
        sections += 1;
        let holds_known_key = name != "logging"
            && value
                .members()
                .iter()
                .any(|(member, _, _)| lookup(&[name, member]).is_some());
        if sections >= 2 || holds_known_key {
            return true;
        }
    }
    false
}

/// A value of a parsed document, as far as the schema looks at it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape<'a> {
    /// `null`.
    Null,
    /// A boolean.
    Bool,
    /// A whole number (clamped to `i64`).
    Integer(i64),
    /// A number with a fraction or exponent.
    Float,
    /// A string.
    Text(&'a str),
    /// A list.
    List,
    /// An object.
    Object,
}

/// A parsed `cufile.json`, however it was parsed: a cheap handle on one
/// value, which knows its shape, its items and its members.
pub trait Tree<'a>: Copy {
    /// Where a member's key is written, for the caller's messages.
    type Place: Copy;
    /// What this value is.
    fn shape(self) -> Shape<'a>;
    /// The items, when this value is a list.
    fn items(self) -> Vec<Self>;
    /// The members in document order, with where each key is written, when
    /// this value is an object.
    fn members(self) -> Vec<(&'a str, Self, Self::Place)>;
}

/// A document as serde_json parsed it (the doctor's [`crate::jsonc::parse`],
/// or a `cufile.json` being rendered).
impl<'a> Tree<'a> for &'a serde_json::Value {
    type Place = ();

    fn shape(self) -> Shape<'a> {
        use serde_json::Value;
        match self {
            Value::Null => Shape::Null,
            Value::Bool(_) => Shape::Bool,
            Value::Number(n) if n.is_i64() => Shape::Integer(n.as_i64().unwrap_or_default()),
            Value::Number(n) if n.is_u64() => Shape::Integer(i64::MAX),
            Value::Number(_) => Shape::Float,
            Value::String(text) => Shape::Text(text),
            Value::Array(_) => Shape::List,
            Value::Object(_) => Shape::Object,
        }
    }

    fn items(self) -> Vec<Self> {
        self.as_array()
            .map(|items| items.iter().collect())
            .unwrap_or_default()
    }

    fn members(self) -> Vec<(&'a str, Self, ())> {
        self.as_object()
            .map(|map| {
                map.iter()
                    .map(|(key, value)| (key.as_str(), value, ()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What is wrong with one key of a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// libcufile does not read this key and ignores it; the closest key it
    /// reads at the same place, when one is close.
    Unknown {
        /// The likely intended key.
        suggestion: Option<&'static str>,
    },
    /// The key has another name now.
    Renamed {
        /// The current name.
        to: &'static str,
    },
    /// The value is not of the key's type.
    WrongType {
        /// The type libcufile expects.
        expected: Type,
    },
    /// A string (or a list item) is not one of the allowed values.
    NotAllowed {
        /// The value written.
        value: String,
        /// The values allowed.
        allowed: &'static [&'static str],
    },
    /// An integer (or a list item) is outside the key's range.
    OutOfRange {
        /// The value written.
        value: i64,
        /// The key's range.
        range: (i64, i64),
    },
    /// A list that pairs up with another ([`PAIRED`]) has another length.
    Unpaired {
        /// The list it pairs with.
        with: &'static str,
        /// This list's length.
        len: usize,
        /// The other list's length.
        with_len: usize,
    },
}

impl Problem {
    /// What to do about it, as a lowercase fragment.
    pub fn remedy(&self) -> String {
        match self {
            Problem::Unknown {
                suggestion: Some(name),
            }
            | Problem::Renamed { to: name } => format!("rename it to `{name}`"),
            Problem::Unknown { suggestion: None } => "remove the key; cufile ignores it".to_owned(),
            Problem::WrongType { expected } => format!("write {}", expected.describe()),
            Problem::NotAllowed { allowed, .. } => format!("use one of {}", allowed.join(", ")),
            Problem::OutOfRange { range, .. } => {
                format!("write a value {}", describe_range(*range))
            }
            Problem::Unpaired { with, .. } => {
                format!("give it as many items as `{with}`: one per item there")
            }
        }
    }
}

/// `from 0 to 3`, `of at least 0`.
fn describe_range((min, max): (i64, i64)) -> String {
    if max == i64::MAX {
        format!("of at least {min}")
    } else {
        format!("from {min} to {max}")
    }
}

/// A problem at one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding<P> {
    /// The dotted path of the key.
    pub path: String,
    /// Where the key is written.
    pub place: P,
    /// What is wrong.
    pub problem: Problem,
}

impl<P> Finding<P> {
    /// The finding as a lowercase fragment: `` `x` is not a cufile key
    /// (did you mean `y`?) ``.
    pub fn message(&self) -> String {
        let path = &self.path;
        match &self.problem {
            Problem::Unknown {
                suggestion: Some(name),
            } => format!("`{path}` is not a cufile key (did you mean `{name}`?)"),
            Problem::Unknown { suggestion: None } => format!("`{path}` is not a cufile key"),
            Problem::Renamed { to } => format!("`{path}` is an old name: cufile reads `{to}`"),
            Problem::WrongType { expected } => {
                format!("`{path}` should be {}", expected.describe())
            }
            Problem::NotAllowed { value, allowed } => {
                format!("`{path}` is `{value}`, not one of {}", allowed.join(", "))
            }
            Problem::OutOfRange { value, range } => {
                format!("`{path}` is {value}, not {}", describe_range(*range))
            }
            Problem::Unpaired {
                with,
                len,
                with_len,
            } => format!(
                "`{path}` has {len} items but `{with}` has {with_len}: the lists pair up item by item"
            ),
        }
    }
}

/// Every problem of the document `root`, in document order. The contents of
/// an unknown or renamed key are not searched; `null` is accepted for any
/// key, as libcufile then keeps its default.
pub fn judge<'a, T: Tree<'a>>(root: T) -> Vec<Finding<T::Place>> {
    let mut findings = Vec::new();
    walk(root, &mut Vec::new(), &mut findings);
    for (first, second) in PAIRED {
        if let (Some((a, _)), Some((b, place))) = (member_at(root, first), member_at(root, second))
            && a.shape() == Shape::List
            && b.shape() == Shape::List
            && a.items().len() != b.items().len()
        {
            findings.push(Finding {
                path: (*second).to_owned(),
                place,
                problem: Problem::Unpaired {
                    with: first,
                    len: b.items().len(),
                    with_len: a.items().len(),
                },
            });
        }
    }
    findings
}

/// The value at the dotted `path` below `root`, with where its key is written.
fn member_at<'a, T: Tree<'a>>(root: T, path: &str) -> Option<(T, T::Place)> {
    let mut found: Option<(T, T::Place)> = None;
    let mut current = root;
    for part in path.split('.') {
        let (value, place) = current
            .members()
            .into_iter()
            .rev()
            .find(|(name, ..)| *name == part)
            .map(|(_, value, place)| (value, place))?;
        found = Some((value, place));
        current = value;
    }
    found
}

fn walk<'a, T: Tree<'a>>(value: T, path: &mut Vec<&'a str>, findings: &mut Vec<Finding<T::Place>>) {
    for (name, child, place) in value.members() {
        path.push(name);
        let dotted = path.join(".");
        let problem = match lookup(path) {
            Some(known) => value_problem(known, child),
            None => match RENAMED.iter().find(|(old, _)| *old == dotted) {
                Some((_, to)) => Some(Problem::Renamed { to }),
                None => Some(Problem::Unknown {
                    suggestion: suggestion(path),
                }),
            },
        };
        match problem {
            Some(problem) => findings.push(Finding {
                path: dotted,
                place,
                problem,
            }),
            None => walk(child, path, findings),
        }
        path.pop();
    }
}

fn value_problem<'a, T: Tree<'a>>(known: &Key, value: T) -> Option<Problem> {
    let wrong = || Some(Problem::WrongType { expected: known.ty });
    let not_allowed = |text: &str| {
        (!known.allowed.is_empty() && !known.allowed.contains(&text)).then(|| Problem::NotAllowed {
            value: text.to_owned(),
            allowed: known.allowed,
        })
    };
    let out_of_range = |number: i64| {
        let (min, max) = known.range;
        (number < min || number > max).then_some(Problem::OutOfRange {
            value: number,
            range: known.range,
        })
    };
    match (known.ty, value.shape()) {
        (_, Shape::Null) | (Type::Bool, Shape::Bool) | (Type::Section, Shape::Object) => None,
        (Type::Integer, Shape::Integer(number)) => out_of_range(number),
        (Type::String, Shape::Text(text)) => not_allowed(text),
        (Type::Strings, Shape::List) => {
            value
                .items()
                .into_iter()
                .find_map(|item| match item.shape() {
                    Shape::Text(text) => not_allowed(text),
                    _ => wrong(),
                })
        }
        (Type::Integers, Shape::List) => {
            value
                .items()
                .into_iter()
                .find_map(|item| match item.shape() {
                    Shape::Integer(number) => out_of_range(number),
                    _ => wrong(),
                })
        }
        _ => wrong(),
    }
}

/// The closest key libcufile reads beside the unknown last part of `path`.
fn suggestion(path: &[&str]) -> Option<&'static str> {
    let (_, parent) = path.split_last()?;
    let siblings = KEYS.iter().filter_map(|known| {
        let parts: Vec<&'static str> = known.path.split('.').collect();
        let (last, above) = parts.split_last()?;
        (*last != "*" && above.len() == parent.len() && matches(&above.join("."), parent))
            .then_some(*last)
    });
    suggest::closest(path[path.len() - 1], siblings)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> serde_json::Value {
        serde_json::from_str(text).expect("json")
    }

    #[test]
    fn cufile_content_is_told_from_other_json() {
        // Two sections, or one section holding a key only cuFile reads.
        assert!(looks_like_cufile(&json(
            r#"{"logging": {}, "properties": {}}"#
        )));
        assert!(looks_like_cufile(&json(
            r#"{"properties": {"allow_compat_mode": false}}"#
        )));
        assert!(looks_like_cufile(&json(r#"{"fs": {}, "blacklist": {}}"#)));
        // A JSON Schema has `properties` too, with other members.
        assert!(!looks_like_cufile(&json(
            r#"{"type": "object", "properties": {"name": {}}}"#
        )));
        // Many programs have `logging.level`.
        assert!(!looks_like_cufile(&json(
            r#"{"logging": {"level": "INFO"}}"#
        )));
        assert!(!looks_like_cufile(&json(
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "logging": {}, "fs": {}}"#
        )));
        assert!(!looks_like_cufile(&json("[1, 2]")));
    }

    /// A small tree for the tests: a value and its members.
    #[derive(Debug)]
    enum V {
        Bool,
        Int(i64),
        Text(&'static str),
        List(Vec<V>),
        Object(Vec<(&'static str, V)>),
    }

    impl<'a> Tree<'a> for &'a V {
        type Place = ();
        fn shape(self) -> Shape<'a> {
            match self {
                V::Bool => Shape::Bool,
                V::Int(n) => Shape::Integer(*n),
                V::Text(text) => Shape::Text(text),
                V::List(_) => Shape::List,
                V::Object(_) => Shape::Object,
            }
        }
        fn items(self) -> Vec<Self> {
            match self {
                V::List(items) => items.iter().collect(),
                _ => Vec::new(),
            }
        }
        fn members(self) -> Vec<(&'a str, Self, ())> {
            match self {
                V::Object(members) => members.iter().map(|(k, v)| (*k, v, ())).collect(),
                _ => Vec::new(),
            }
        }
    }

    fn messages(root: &V) -> Vec<String> {
        judge(root).iter().map(Finding::message).collect()
    }

    #[test]
    fn every_key_is_unique_and_its_parent_is_a_section() {
        for (index, known) in KEYS.iter().enumerate() {
            assert!(
                KEYS[..index].iter().all(|k| k.path != known.path),
                "{} twice",
                known.path
            );
            if let Some((parent, _)) = known.path.rsplit_once('.') {
                let parts: Vec<&str> = parent.split('.').collect();
                assert_eq!(
                    lookup(&parts).map(|k| k.ty),
                    Some(Type::Section),
                    "{}",
                    known.path
                );
            }
        }
        for (old, new) in RENAMED {
            assert!(lookup(&[old]).is_none() && lookup(&[new]).is_some());
        }
    }

    #[test]
    fn a_good_document_has_no_problem() {
        let root = V::Object(vec![
            ("logging", V::Object(vec![("level", V::Text("ERROR"))])),
            (
                "properties",
                V::Object(vec![
                    ("allow_compat_mode", V::Bool),
                    ("rdma_dev_addr_list", V::List(vec![V::Text("10.0.0.1")])),
                    (
                        "posix_pool_slab_size_kb",
                        V::List(vec![V::Int(4), V::Int(1024)]),
                    ),
                    (
                        "posix_pool_slab_count",
                        V::List(vec![V::Int(128), V::Int(64)]),
                    ),
                ]),
            ),
            (
                "fs",
                V::Object(vec![(
                    "nfs",
                    V::Object(vec![(
                        "mount_table",
                        V::Object(vec![(
                            "/mnt/a",
                            V::Object(vec![("rdma_dev_addr_list", V::List(vec![]))]),
                        )]),
                    )]),
                )]),
            ),
        ]);
        assert_eq!(messages(&root), Vec::<String>::new());
    }

    #[test]
    fn problems_are_named_with_the_likely_key() {
        let root = V::Object(vec![
            ("nvfs", V::Object(vec![("rdma", V::Bool)])),
            ("blacklist", V::Object(vec![("drivers", V::List(vec![]))])),
            (
                "properties",
                V::Object(vec![
                    ("alow_compat_mode", V::Bool),
                    ("force_compat_mode", V::Text("false")),
                    ("rdma_dynamic_routing_order", V::List(vec![V::Text("GPU")])),
                ]),
            ),
            ("logging", V::Object(vec![("level", V::Text("LOUD"))])),
        ]);
        assert_eq!(
            messages(&root),
            [
                "`nvfs` is not a cufile key",
                "`blacklist` is an old name: cufile reads `denylist`",
                "`properties.alow_compat_mode` is not a cufile key (did you mean `allow_compat_mode`?)",
                "`properties.force_compat_mode` should be a boolean",
                "`properties.rdma_dynamic_routing_order` is `GPU`, not one of GPU_MEM_NVLINKS, GPU_MEM, SYS_MEM, P2P",
                "`logging.level` is `LOUD`, not one of NOTICE, ERROR, WARN, INFO, DEBUG, TRACE",
            ]
        );
    }

    #[test]
    fn values_out_of_range_and_unpaired_lists_are_named() {
        // The guide's comments: cufile_stats is a level from 0 to 3, and
        // max_file_size_mb takes -1 for "no limit".
        let value = serde_json::json!({
            "logging": {"level": 2, "max_file_size_mb": -1},
            "profile": {"cufile_stats": 4},
            "execution": {"max_io_threads": -4},
            "properties": {
                "posix_pool_slab_size_kb": [4, 1024, 16384],
                "posix_pool_slab_count": [128, -64],
            },
        });
        let found: Vec<String> = judge(&value).iter().map(Finding::message).collect();
        assert_eq!(
            found,
            // serde_json's objects are sorted by key.
            [
                "`execution.max_io_threads` is -4, not of at least 0",
                "`logging.level` should be a string",
                "`profile.cufile_stats` is 4, not from 0 to 3",
                "`properties.posix_pool_slab_count` is -64, not of at least 0",
                "`properties.posix_pool_slab_count` has 2 items but `properties.posix_pool_slab_size_kb` has 3: the lists pair up item by item",
            ]
        );
        let remedies: Vec<String> = judge(&value).iter().map(|f| f.problem.remedy()).collect();
        assert_eq!(remedies[2], "write a value from 0 to 3");
    }

    #[test]
    fn a_json_value_is_judged_like_any_tree() {
        let value = serde_json::json!({
            "properties": {"allow_compat_mode": "yes", "io_batchsize": 128},
            "nvfs": {},
        });
        let found: Vec<String> = judge(&value).iter().map(Finding::message).collect();
        assert_eq!(
            found,
            [
                "`nvfs` is not a cufile key",
                "`properties.allow_compat_mode` should be a boolean",
            ]
        );
    }

    #[test]
    fn gdscheck_names_map_to_keys() {
        assert_eq!(
            from_gdscheck("properties.use_compat_mode"),
            "properties.allow_compat_mode"
        );
        assert_eq!(from_gdscheck("profile.nvtx"), "profile.nvtx");
    }
}
