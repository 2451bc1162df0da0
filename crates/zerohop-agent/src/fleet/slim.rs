//! Lists that keep only what the view reads.
//!
//! A GPU node's object is some 20 KB: a hundred and fifty NFD labels,
//! annotations, fifty container images and the managed fields. `fleet`
//! reads five labels, the capacity, `unschedulable` and one condition.
//! Each page is parsed into these shapes, which skip everything else, so
//! that memory holds one page of text and the slim objects, not every
//! Node whole; the same for the report objects, of which the view reads
//! the interval and the failing checks.
//!
//! The labels and the capacity are filtered while they are parsed: a
//! label the view does not read is compared and skipped, never copied, so
//! that parsing a page costs little more than scanning its text.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde_json::{Value, json};
use zerohop_known::zerohop_api::LABEL_PREFIX;

use super::state::DATA_PATH_LABELS;
use crate::condition;

/// One page of a list: its items and where the next page starts.
#[derive(Debug, Deserialize)]
pub struct Page<T> {
    /// The list's metadata.
    #[serde(default)]
    pub metadata: PageMeta,
    /// The objects of this page.
    #[serde(default = "Vec::new")]
    pub items: Vec<T>,
}

/// A list's metadata: the continue token, when there is a next page.
#[derive(Debug, Default, Deserialize)]
pub struct PageMeta {
    /// Empty or absent on the last page.
    #[serde(rename = "continue", default)]
    pub continue_: Option<String>,
}

/// What `fleet` reads of a Node, in a list and in the reflector of
/// `--watch` (which also needs the resourceVersion to resume from).
#[derive(Debug, Clone, Deserialize)]
pub struct SlimNode {
    #[serde(deserialize_with = "slim_meta")]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: SlimSpec,
    #[serde(default)]
    status: SlimStatus,
}

#[derive(Debug, Deserialize)]
struct SlimMeta {
    #[serde(default)]
    name: String,
    #[serde(rename = "resourceVersion", default)]
    resource_version: Option<String>,
    #[serde(default, deserialize_with = "wanted_labels")]
    labels: BTreeMap<String, String>,
}

/// The name, resourceVersion and wanted labels, as an `ObjectMeta`.
fn slim_meta<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let meta = SlimMeta::deserialize(deserializer)?;
    Ok(ObjectMeta {
        name: Some(meta.name),
        resource_version: meta.resource_version,
        labels: Some(meta.labels),
        ..ObjectMeta::default()
    })
}

impl k8s_openapi::Resource for SlimNode {
    const API_VERSION: &'static str = Node::API_VERSION;
    const GROUP: &'static str = Node::GROUP;
    const KIND: &'static str = Node::KIND;
    const VERSION: &'static str = Node::VERSION;
    const URL_PATH_SEGMENT: &'static str = Node::URL_PATH_SEGMENT;
    type Scope = <Node as k8s_openapi::Resource>::Scope;
}

impl k8s_openapi::Metadata for SlimNode {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
struct SlimSpec {
    #[serde(default)]
    unschedulable: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct SlimStatus {
    #[serde(default, deserialize_with = "our_condition")]
    conditions: Vec<NodeCondition>,
    #[serde(default, deserialize_with = "device_capacity")]
    capacity: BTreeMap<String, Quantity>,
}

/// The labels the view reads: those that mark a data path node and the
/// agent's capability labels.
fn wanted_labels<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, String>, D::Error> {
    deserializer.deserialize_any(Kept {
        wanted: |key| key.starts_with(LABEL_PREFIX) || DATA_PATH_LABELS.contains(&key),
        value: PhantomData,
    })
}

/// Only the agent's condition.
fn our_condition<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<NodeCondition>, D::Error> {
    let all = Option::<Vec<NodeCondition>>::deserialize(deserializer)?.unwrap_or_default();
    Ok(condition::ours(&all).cloned().into_iter().collect())
}

/// Only the GPU and RDMA resources.
fn device_capacity<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, Quantity>, D::Error> {
    deserializer.deserialize_any(Kept {
        wanted: super::state::is_device_resource,
        value: PhantomData,
    })
}

/// Parses a JSON object (or `null`) into the entries whose key is
/// `wanted`; the others' values are skipped unparsed.
struct Kept<V> {
    wanted: fn(&str) -> bool,
    value: PhantomData<V>,
}

impl<'de, V: Deserialize<'de>> Visitor<'de> for Kept<V> {
    type Value = BTreeMap<String, V>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object or null")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(BTreeMap::new())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut kept = BTreeMap::new();
        while let Some(key) = map.next_key_seed(KeySeed(self.wanted))? {
            match key {
                Some(key) => {
                    kept.insert(key, map.next_value()?);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(kept)
    }
}

/// Reads a key: `Some` of it when it is wanted, else `None` without a
/// copy.
struct KeySeed(fn(&str) -> bool);

impl<'de> de::DeserializeSeed<'de> for KeySeed {
    type Value = Option<String>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Option<String>, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Option<String>, E> {
        Ok((self.0)(key).then(|| key.to_owned()))
    }
}

impl From<SlimNode> for Node {
    fn from(slim: SlimNode) -> Node {
        Node {
            metadata: slim.metadata,
            spec: Some(NodeSpec {
                unschedulable: slim.spec.unschedulable,
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(slim.status.conditions),
                capacity: Some(slim.status.capacity),
                ..NodeStatus::default()
            }),
        }
    }
}

/// What `fleet` reads of a `DataPathReport`.
#[derive(Debug, Deserialize)]
pub struct SlimReport {
    metadata: SlimReportMeta,
    #[serde(default)]
    pass: SlimPass,
    #[serde(default)]
    findings: Vec<SlimFinding>,
}

#[derive(Debug, Deserialize)]
struct SlimReportMeta {
    #[serde(default)]
    name: String,
}

#[derive(Debug, Default, Deserialize)]
struct SlimPass {
    #[serde(rename = "intervalSeconds", default)]
    interval_seconds: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct SlimFinding {
    #[serde(default)]
    id: String,
    #[serde(default)]
    status: String,
}

impl SlimReport {
    /// The report's name (its node's) and the part of it the view reads,
    /// in the object's own shape.
    pub fn into_named_value(self) -> (String, Value) {
        let findings: Vec<Value> = self
            .findings
            .into_iter()
            .filter(|f| f.status == "fail")
            .map(|f| json!({ "id": f.id, "status": f.status }))
            .collect();
        let value = json!({
            "pass": { "intervalSeconds": self.pass.interval_seconds },
            "findings": findings,
        });
        (self.metadata.name, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_keeps_only_what_the_view_reads() {
        let text = r#"{"metadata":{"continue":""},"items":[{
            "metadata":{"name":"gpu-1","labels":{
                "nvidia.com/gpu.present":"true","kubernetes.io/arch":"amd64",
                "zerohop.dev/gpudirect-rdma":"ready"},
                "annotations":{"a":"b"},"managedFields":[{"manager":"kubelet"}]},
            "spec":{"unschedulable":true,"podCIDR":"10.0.0.0/24"},
            "status":{"conditions":[
                {"type":"Ready","status":"True"},
                {"type":"zerohop.dev/DataPathReady","status":"False","reason":"RdmaPortDown"}],
                "capacity":{"cpu":"64","nvidia.com/gpu":"8","rdma/ib":"1"},
                "images":[{"names":["registry/x:1"],"sizeBytes":1}]}}]}"#;
        let page: Page<SlimNode> = serde_json::from_str(text).unwrap();
        assert_eq!(page.metadata.continue_.as_deref(), Some(""));
        let node: Node = page.items.into_iter().next().unwrap().into();
        let labels = node.metadata.labels.as_ref().unwrap();
        assert_eq!(
            labels.keys().collect::<Vec<_>>(),
            ["nvidia.com/gpu.present", "zerohop.dev/gpudirect-rdma"]
        );
        assert!(node.metadata.annotations.is_none());
        assert!(node.metadata.managed_fields.is_none());
        assert_eq!(node.spec.as_ref().unwrap().unschedulable, Some(true));
        let status = node.status.as_ref().unwrap();
        let conditions = status.conditions.as_ref().unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].type_, "zerohop.dev/DataPathReady");
        assert_eq!(
            status.capacity.as_ref().unwrap().keys().collect::<Vec<_>>(),
            ["nvidia.com/gpu", "rdma/ib"]
        );
        assert!(status.images.is_none());
    }

    #[test]
    fn labels_are_filtered_while_they_are_parsed() {
        let node = |labels: &str| {
            serde_json::from_str::<SlimNode>(&format!(
                r#"{{"metadata":{{"name":"n","labels":{labels}}}}}"#
            ))
        };
        assert!(node("null").unwrap().metadata.labels.unwrap().is_empty());
        // What is skipped is not parsed into anything, whatever its shape;
        // a label that is kept must still be a string.
        let kept = node(r#"{"a":{"b":[1,2]},"nvidia.com/gpu.present":"true","c\"d":3}"#)
            .unwrap()
            .metadata
            .labels
            .unwrap();
        assert_eq!(
            kept.into_iter().collect::<Vec<_>>(),
            [("nvidia.com/gpu.present".to_owned(), "true".to_owned())]
        );
        assert!(node(r#"{"nvidia.com/gpu.present":true}"#).is_err());
        assert!(node(r#"["nvidia.com/gpu.present"]"#).is_err());
    }

    #[test]
    fn a_report_keeps_its_interval_and_failing_checks() {
        let text = r#"{"apiVersion":"zerohop.dev/v1alpha1","kind":"DataPathReport",
            "metadata":{"name":"gpu-1","managedFields":[]},
            "pass":{"intervalSeconds":300,"finishedAt":"2026-01-01T00:00:00Z"},
            "summary":{"fail":1},
            "findings":[{"id":"RDMA004","status":"fail","message":"port 1 is DOWN"},
                        {"id":"GPU001","status":"warn"}]}"#;
        let (name, value) = serde_json::from_str::<SlimReport>(text)
            .unwrap()
            .into_named_value();
        assert_eq!(name, "gpu-1");
        assert_eq!(value["pass"]["intervalSeconds"], 300);
        assert_eq!(
            value["findings"],
            json!([{ "id": "RDMA004", "status": "fail" }])
        );
    }
}
