//! The grammars the intent's strings must follow before they reach a
//! manifest, a script, a systemd unit, a mount or a command.
//!
//! Each check returns what is wrong as a lowercase fragment that follows
//! the value in a diagnostic (`pf "eth/0" contains `/`, which the kernel
//! refuses`). Names the kernel defines (netdev, RDMA device, PCI address)
//! come from `zerohop_known::names`, image references, quantities and resource
//! names from `zerohop_known::{image, quantity, resource_name}`, Kubernetes names and labels from
//! `zerohop_k8s`; what is here is what only the planner needs.

mod kernel;
mod kubernetes;
mod network;
mod path;
mod version;

pub(crate) use kernel::cpu_list;
pub(crate) use kubernetes::{csi_driver_name, dns_label, dns_subdomain, label};
pub(crate) use network::{Subnet, cidr, host, ip_address, nccl_socket_ifname};
pub(crate) use path::absolute_path;
pub(crate) use version::doca_driver_tag;
pub(crate) use zerohop_known::image::{reference as image_reference, tag as image_tag};
pub(crate) use zerohop_known::quantity::check as quantity;
pub(crate) use zerohop_known::resource_name::portable as resource_name;
