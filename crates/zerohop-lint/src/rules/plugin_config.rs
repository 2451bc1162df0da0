//! The device plugins' JSON configuration, read for what the rules use.
//!
//! The SR-IOV network device plugin and the RDMA shared device plugin take
//! their resources as a JSON string (a NicClusterPolicy's
//! `spec.sriovDevicePlugin.config`, a ConfigMap's `config.json`), and that
//! string can be as large as an input may be. Reading it into a JSON tree
//! and keeping each resource's `selectors` object held the whole tree plus
//! a copy of every selector: 1.4 GiB for a 32 MiB config. This reads each
//! entry of the list for the four things the rules use (`resourceName`,
//! `resourcePrefix`, `selectors.devices`, `selectors.isRdma`) and skips the
//! rest without building it.
//!
//! The plugin's own reader is strict (k8snetworkplumbingwg/
//! sriov-network-device-plugin `cmd/sriovdp/manager.go`, `readConfig`, at
//! 40b6f507: `json.Unmarshal` into a `ResourceConfList`); this one is
//! lenient as the rules need: a config that is not JSON, or whose list is
//! not a list, yields no resources, and an entry of another shape, or
//! without a string `resourceName`, is passed over. `selectors` is "either
//! a single device selector map or a list of maps", the list preferred
//! (the same repository's `README.md`, "Config parameters"); the devices of
//! every map count.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One resource of a device plugin's `resourceList` or `configList`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct PluginResource {
    /// `resourceName`.
    pub name: String,
    /// `resourcePrefix`, when written as a string.
    pub prefix: Option<String>,
    /// The string entries of `selectors.devices` (device IDs).
    pub devices: Vec<String>,
    /// Whether a selector says `isRdma: true`.
    pub is_rdma: bool,
}

/// The resources listed under `list_key` in the JSON `config`; none when
/// the config is not a JSON object or the key does not hold a list.
pub(crate) fn resources(config: &str, list_key: &str) -> Vec<PluginResource> {
    let mut reader = serde_json::Deserializer::from_str(config);
    let Ok(list) = reader.deserialize_map(ConfigVisitor { list_key }) else {
        return Vec::new();
    };
    // Trailing text after the object makes the config unreadable to the
    // plugin too.
    if reader.end().is_err() {
        return Vec::new();
    }
    list
}

/// Anything that is not what a reader wants: skipped, whatever its type.
macro_rules! ignore_other_values {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Self::Value::default())
        }
    };
}

/// The top-level object: its `list_key` list, every other member skipped.
struct ConfigVisitor<'k> {
    list_key: &'k str,
}

impl<'de> Visitor<'de> for ConfigVisitor<'_> {
    type Value = Vec<PluginResource>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a device plugin configuration object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut list = Vec::new();
        while let Some(key) = map.next_key::<Key>()? {
            if key.0 == self.list_key {
                // A repeated key: the last one wins, as in a JSON tree.
                list = map.next_value_seed(ListSeed)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(list)
    }
}

/// An object key, unescaped.
struct Key(String);

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Key)
    }
}

/// The list of resources: a list yields its resource entries, anything
/// else none.
struct ListSeed;

impl<'de> de::DeserializeSeed<'de> for ListSeed {
    type Value = Vec<PluginResource>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(ListVisitor)
    }
}

struct ListVisitor;

impl<'de> Visitor<'de> for ListVisitor {
    type Value = Vec<PluginResource>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of resources")
    }

    ignore_other_values!();

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|_: IgnoredAny| Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(entry) = seq.next_element::<Entry>()? {
            out.extend(entry.0);
        }
        Ok(out)
    }
}

/// One entry of the list: a resource when it is an object with a string
/// `resourceName`.
#[derive(Default)]
struct Entry(Option<PluginResource>);

impl<'de> de::Deserialize<'de> for Entry {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(EntryVisitor)
    }
}

struct EntryVisitor;

impl<'de> Visitor<'de> for EntryVisitor {
    type Value = Entry;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a resource")
    }

    ignore_other_values!();

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Entry(None))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        de::Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))
            .map(|_: IgnoredAny| Entry(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name = None;
        let mut prefix = None;
        let mut selectors = Selectors::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "resourceName" => name = map.next_value::<MaybeString>()?.0,
                "resourcePrefix" => prefix = map.next_value::<MaybeString>()?.0,
                "selectors" => selectors = map.next_value::<Selectors>()?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Entry(name.map(|name| PluginResource {
            name,
            prefix,
            devices: selectors.devices,
            is_rdma: selectors.is_rdma,
        })))
    }
}

/// A string, or nothing for a value of another type.
#[derive(Default)]
struct MaybeString(Option<String>);

impl<'de> de::Deserialize<'de> for MaybeString {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MaybeStringVisitor)
    }
}

struct MaybeStringVisitor;

impl<'de> Visitor<'de> for MaybeStringVisitor {
    type Value = MaybeString;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    ignore_other_values!();

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(MaybeString(Some(text.to_owned())))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(MaybeString(Some(text)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        de::Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))
            .map(|_: IgnoredAny| MaybeString(None))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|_: IgnoredAny| MaybeString(None))
    }
}

/// What the rules read of `selectors`: one object or a list of them.
#[derive(Default)]
struct Selectors {
    devices: Vec<String>,
    is_rdma: bool,
}

impl Selectors {
    fn merge(&mut self, other: Selectors) {
        self.devices.extend(other.devices);
        self.is_rdma |= other.is_rdma;
    }
}

impl<'de> de::Deserialize<'de> for Selectors {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SelectorsVisitor)
    }
}

struct SelectorsVisitor;

impl<'de> Visitor<'de> for SelectorsVisitor {
    type Value = Selectors;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("device selectors")
    }

    ignore_other_values!();

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Selectors::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut all = Selectors::default();
        while let Some(one) = seq.next_element::<Selectors>()? {
            all.merge(one);
        }
        Ok(all)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut selectors = Selectors::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key.0.as_str() {
                "devices" => selectors.devices = map.next_value::<Strings>()?.0,
                "isRdma" => selectors.is_rdma = map.next_value::<MaybeBool>()?.0,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(selectors)
    }
}

/// The string items of a list; nothing for a value of another type.
#[derive(Default)]
struct Strings(Vec<String>);

impl<'de> de::Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StringsVisitor)
    }
}

struct StringsVisitor;

impl<'de> Visitor<'de> for StringsVisitor {
    type Value = Strings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of strings")
    }

    ignore_other_values!();

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Strings::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = seq.next_element::<MaybeString>()? {
            out.extend(item.0);
        }
        Ok(Strings(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|_: IgnoredAny| Strings::default())
    }
}

/// `true` only for the JSON value `true`.
#[derive(Default)]
struct MaybeBool(bool);

impl<'de> de::Deserialize<'de> for MaybeBool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MaybeBoolVisitor)
    }
}

struct MaybeBoolVisitor;

impl<'de> Visitor<'de> for MaybeBoolVisitor {
    type Value = MaybeBool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a boolean")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Self::Value, E> {
        Ok(MaybeBool(value))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(MaybeBool(false))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(MaybeBool(false))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(MaybeBool(false))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(MaybeBool(false))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(MaybeBool(false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        de::Deserialize::deserialize(de::value::SeqAccessDeserializer::new(seq))
            .map(|_: IgnoredAny| MaybeBool(false))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        de::Deserialize::deserialize(de::value::MapAccessDeserializer::new(map))
            .map(|_: IgnoredAny| MaybeBool(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(name: &str, devices: &[&str], is_rdma: bool) -> PluginResource {
        PluginResource {
            name: name.to_owned(),
            prefix: None,
            devices: devices.iter().map(|d| (*d).to_owned()).collect(),
            is_rdma,
        }
    }

    #[test]
    fn reads_the_fields_the_rules_use_and_skips_the_rest() {
        let config = r#"{"resourceList": [
            {"resourceName": "a", "resourcePrefix": "nvidia.com",
             "selectors": {"vendors": ["15b3"], "devices": ["101e", 7], "isRdma": true}},
            {"resourceName": "b", "selectors": [{"devices": ["1018"]}, {"devices": ["101c"], "isRdma": true}]},
            {"resourceName": 3}, "x", 4, null, [1], {},
            {"resourceName": "c\u0041", "selectors": "odd"}
        ], "other": {"deep": [1, 2, {"x": null}]}}"#;
        let mut a = resource("a", &["101e"], true);
        a.prefix = Some("nvidia.com".to_owned());
        assert_eq!(
            resources(config, "resourceList"),
            vec![
                a,
                resource("b", &["1018", "101c"], true),
                resource("cA", &[], false)
            ]
        );
    }

    #[test]
    fn what_is_not_a_config_yields_nothing() {
        for config in [
            "",
            "[]",
            "not json",
            r#"{"resourceList": {"resourceName": "a"}}"#,
            r#"{"resourceList": "a"}"#,
            r#"{"resourceList": [{"resourceName": "a"}]} trailing"#,
            r#"{"resourceList": [{"resourceName": "a"}"#,
        ] {
            assert_eq!(resources(config, "resourceList"), Vec::new(), "{config}");
        }
    }

    #[test]
    fn a_repeated_list_key_keeps_the_last_like_a_json_tree() {
        let config =
            r#"{"configList": [{"resourceName": "a"}], "configList": [{"resourceName": "b"}]}"#;
        assert_eq!(
            resources(config, "configList"),
            vec![resource("b", &[], false)]
        );
    }
}
