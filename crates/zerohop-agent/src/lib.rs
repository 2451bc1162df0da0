//! zerohop's node agent and fleet view: continuous verification of every
//! node's zero-copy data path, published through the Kubernetes API.
//!
//! The agent runs the doctor on a jittered schedule against the host
//! mounted at `/host` and publishes each pass's one result everywhere users
//! already look: `/metrics`, `/report`, a node condition, Node Feature
//! Discovery labels, events and a `DataPathReport` object. `fleet` reads
//! those back from the API server and shows the whole cluster. Everything
//! here that needs tokio or kube lives in this crate, so that the one-shot
//! commands build without them.

pub mod agent;
pub mod bounded;
pub mod capabilities;
pub mod condition;
pub mod connections;
pub mod counters;
pub mod event_sink;
pub mod events;
pub mod features_file;
pub mod fleet;
pub mod http;
pub mod jitter;
mod log;
pub mod metrics;
pub mod publisher;
pub mod report_object;
pub mod snapshot;
pub mod uninstall;
