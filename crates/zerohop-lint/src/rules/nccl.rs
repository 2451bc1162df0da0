//! NCCL settings of GPU workloads.

use zerohop_core::Remediation;
use zerohop_known::nccl::{NET_GDR_LEVEL, NET_GDR_LEVEL_DEFAULT, legacy_level};

use super::container_env::settings;
use crate::model::{Workspace, pod_templates};
use crate::registry::declare_lint;
use crate::sink::{Sink, short};

declare_lint! {
    /// `NCCL_NET_GDR_LEVEL` set to a number, which NCCL reads by a legacy table that no longer matches its path classes.
    ///
    /// ## What it checks
    /// Every container of a pod (template) that sets `NCCL_NET_GDR_LEVEL`
    /// to a value starting with a digit, in `env` or in its `command` or
    /// `args` (`export NCCL_NET_GDR_LEVEL=3`, `mpirun -x
    /// NCCL_NET_GDR_LEVEL=5`).
    ///
    /// ## Why it matters
    /// NCCL reads a number through a table kept from its first releases:
    /// 0 `LOC`, 1 `PIX`, 2 `PXB`, 3 `PHB`, 4 and above `SYS`
    /// (NVIDIA/nccl `src/graph/paths.cc`, `ncclGetLevel`,
    /// `levelsOldToNew`). The path classes have grown since (`NVL`, `NVB`,
    /// `C2C`, `P2C`, `PXN`), and the numbers no longer follow their order
    /// in NCCL's source, in `nvidia-smi topo -m` or in guides written for
    /// other releases: `0`, often meant as "off" or "lowest", is `LOC`,
    /// which turns GPUDirect RDMA off for every NIC; `2` meant as "through
    /// the CPU" is `PXB`, which leaves a NIC behind another root port to
    /// stage through host memory. NCCL's documentation calls the numbers
    /// legacy and discouraged ("the literal values can change over time",
    /// `env.rst`, "Integer Values (Legacy)").
    ///
    /// ## How to fix
    /// Write the class by name: `PIX`, `PXB`, `PHB` or `SYS` (the finding
    /// names the one NCCL reads the number as), or leave the variable unset
    /// for NCCL's default (`PXB` on PCIe hosts).
    ///
    /// ## Example
    ///
    /// On `crates/zerohop-lint/tests/fixtures/ZL098/fail/`:
    ///
    /// ```text
    /// warning[ZL098]: NCCL_NET_GDR_LEVEL=0 is a legacy number that NCCL reads as `LOC`, which turns GPUDirect RDMA off
    ///   --> fail/input.yaml:16:15
    ///    |
    /// 16 |               value: "0"
    ///    |               ^^^^^
    ///    = object: Job/allreduce
    ///    = help: write the class by name (NCCL_NET_GDR_LEVEL=LOC keeps today's meaning), or unset it for NCCL's default `PXB`
    ///            - name: NCCL_NET_GDR_LEVEL
    ///              value: LOC
    ///    = see: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net-gdr-level-formerly-nccl-ib-gdr-level
    /// ```
    pub(crate) static NUMERIC_NCCL_NET_GDR_LEVEL = {
        id: "ZL098",
        name: "numeric-nccl-net-gdr-level",
        severity: Warning,
        check: numeric_nccl_net_gdr_level,
    };
}

fn numeric_nccl_net_gdr_level(workspace: &Workspace<'_>, sink: &mut Sink<'_>) {
    for template in pod_templates(workspace) {
        for (container_path, container) in &template.containers {
            for setting in settings(container, NET_GDR_LEVEL) {
                let Some(value) = setting.value.as_deref() else {
                    continue;
                };
                let Some(class) = legacy_level(value) else {
                    continue;
                };
                let mut path = container_path.clone();
                path.extend(setting.path.iter().copied());
                let consequence = if class == "LOC" {
                    ", which turns GPUDirect RDMA off"
                } else {
                    ""
                };
                sink.report(
                    &template.object,
                    &template.path(&path),
                    format!(
                        "{NET_GDR_LEVEL}={} is a legacy number that NCCL reads as `{class}`{consequence}",
                        short(value)
                    ),
                    Remediation::new(format!(
                        "write the class by name ({NET_GDR_LEVEL}={class} keeps today's meaning), or unset it for NCCL's default `{NET_GDR_LEVEL_DEFAULT}`"
                    ))
                    .command(format!("- name: {NET_GDR_LEVEL}\n  value: {class}"))
                    .doc("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html#nccl-net-gdr-level-formerly-nccl-ib-gdr-level"),
                );
            }
        }
    }
}
