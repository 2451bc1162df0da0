//! The error and congestion counters of RDMA ports: a link that flaps or
//! drops packets while its state reads ACTIVE.

use zerohop_core::{Remediation, Status};
use zerohop_host::facts::{PortCounters, RdmaDevice, RdmaPort};
use zerohop_known::rdma_counters::{
    self as known, BER_LIMIT_RECIPROCAL, Counter, FLAP_COUNTERS, PORT_ERRORS, ROCE_LOSS,
    ROCE_RECEIVER_SHORT,
};

/// The port errors that point at the subnet's configuration rather than
/// the link.
const SUBNET_ERRORS: [Counter; 3] = [
    known::PORT_RCV_CONSTRAINT_ERRORS,
    known::PORT_XMIT_CONSTRAINT_ERRORS,
    known::VL15_DROPPED,
];

use crate::checks::qos::DEFAULT_ROCE_PRIORITY;
use crate::checks::rdma::{MODULE_CHAIN, no_devices, port_name, ports};
use crate::context::{Context, Outcome};
use crate::declare_check;
use crate::fix::{join, write_to};

declare_check! {
    /// RDMA ports count no link, lossless-fabric or congestion trouble.
    ///
    /// ## What it checks
    /// Every port of every RDMA device (`/sys/class/infiniband/<dev>/ports/<p>`),
    /// by its counters since they were last cleared (at driver load, or by
    /// `perfquery -R`), judged against zero as `ibqueryerrors` does:
    ///
    /// - `counters/link_downed` (8 bits) and `link_error_recovery` (8 bits):
    ///   the link went down or retrained. Any count warns; a counter at its
    ///   maximum, 255, fails: the link flapped at least 255 times and no
    ///   further event is counted.
    /// - `local_link_integrity_errors` (4 bits), `excessive_buffer_overrun_errors`
    ///   (4 bits), `port_rcv_errors` and `port_rcv_remote_physical_errors`
    ///   (16 bits), `port_xmit_discards` (16 bits), the constraint errors
    ///   (8 bits) and `VL15_dropped` (16 bits): physical errors past the
    ///   port's limit, receive-buffer overruns that dropped packets, corrupt
    ///   packets, discarded outbound packets, packets a partition refused
    ///   and dropped subnet management packets: the error counters
    ///   `ibqueryerrors` judges by default. Any count warns; a saturated one
    ///   is shown as "at least". `port_rcv_switch_relay_errors` is not
    ///   judged (`ibqueryerrors --suppress-common` suppresses it as common),
    ///   nor `port_xmit_wait` (time spent waiting to send: congestion, which
    ///   the RoCE counters judge).
    /// - `symbol_error` (16 bits): on EDR, HDR and NDR links the errors left
    ///   after forward error correction. It warns when its count over the
    ///   bits the link carried since boot (`/proc/uptime` × the port's
    ///   `rate`) is a bit error rate above 10^-12, the InfiniBand
    ///   specification's limit and `ibdiagnet`'s default (1440 an hour at
    ///   400 Gb/s), or when it is saturated (65535). Without `/proc/uptime`
    ///   only saturation can be judged.
    /// - `hw_counters/` (mlx5 and others), where present: on Ethernet (RoCE)
    ///   ports, `out_of_sequence`, `packet_seq_err` and `local_ack_timeout_err`
    ///   count packets lost on a fabric that should be lossless (warn);
    ///   `rp_cnp_ignored` counts congestion notifications the reaction point
    ///   ignored, and `np_ecn_marked_roce_packets` with `np_cnp_sent` at 0
    ///   shows a notification point that never answers ECN marks (warn; the
    ///   DCQCN switches of QOS003 are shown). On every port,
    ///   `out_of_buffer` and `rnr_nak_retry_err` count receivers that had no
    ///   buffer posted (warn).
    ///
    /// A port with neither `counters/` nor `hw_counters/`, or where no judged
    /// counter held a number (`N/A (no PMA)` from a driver without a
    /// performance management agent), is `unknown`, never a pass.
    /// The widths are the kernel's (`PORT_PMA_ATTR` in
    /// `drivers/infiniband/core/sysfs.c`); the meanings are NVIDIA's
    /// ("Understanding mlx5 Linux Counters and Status Parameters").
    ///
    /// ## Why it matters
    /// RDMA004 reads the port state at one instant: a link that flaps
    /// between checks reads ACTIVE and passes. Every flap stalls or breaks
    /// the queue pairs on it (NCCL and NFS over RDMA time out and
    /// reconnect); every packet lost on a RoCE fabric costs a go-back-N
    /// retransmission of everything after it; congestion notifications that
    /// nobody acts on leave PFC pauses as the only brake, which spreads
    /// congestion through the fabric.
    ///
    /// ## How to fix
    /// Link counters: check the cable, the transceiver and the switch port
    /// (`mlxlink -d <dev> -c -m` shows the physical counters, the BER and
    /// the module), reseat or replace them, then clear the counters
    /// (`perfquery -C <dev> -P <port> -R`) and watch whether they grow.
    /// Lost RoCE packets: enable PFC on the RoCE priority end to end and
    /// DCQCN (QOS003). Ignored CNPs: turn DCQCN's reaction point on
    /// (`/sys/class/net/<if>/ecn/roce_rp/enable/<prio>`). Receivers out of
    /// buffers: the application posts too few receive buffers.
    ///
    /// ## Evidence
    /// The port's `counters/` (the PortCounters of the InfiniBand
    /// specification) and `hw_counters/`, `/proc/uptime` and `rate` for the
    /// bit error rate. A counter that reads `N/A (no PMA)` or not a number is
    /// named as unreadable; a port where no judged counter held a number is
    /// `unknown`, never a pass.
    ///
    /// ## Source
    /// `drivers/infiniband/core/sysfs.c` (`PORT_PMA_ATTR`: widths and
    /// offsets), Linux v6.8; linux-rdma/rdma-core `infiniband-diags/ibqueryerrors.c`
    /// at 0c6807aa5847be3f17a935fd941f3db0d03aa7df (`print_results()`: every
    /// error counter against a zero threshold; `--suppress-common` suppresses
    /// `PortRcvSwitchRelayErrors`, not judged here); NVIDIA "Understanding
    /// mlx5 Linux Counters and Status Parameters" for `hw_counters`.
    ///
    /// Real capture: crates/zerohop-doctor/tests/truth_rdma_storage.rs::saturated_link_downed_fails_the_port
    /// Real capture: crates/zerohop-doctor/tests/real_gpu_rdma.rs::counters_without_a_pma_are_unknown
    ///
    /// ## Example
    ///
    /// From `crates/zerohop-doctor/tests/fixtures/RDMA008/fail-link-flapping/`:
    ///
    /// ```text
    /// rdma
    ///   fail           RDMA008  rdma-port-errors  mlx5_1/1: link_downed saturated at 255: the link flapped at least 255 times since the counters were cleared, and further events are not counted; link_error_recovery 3 (times the link recovered from an error)
    ///                  /sys/class/infiniband/mlx5_1/ports/1/counters/link_downed = 255
    ///                  /sys/class/infiniband/mlx5_1/ports/1/counters/link_error_recovery = 3
    ///
    /// what to fix first
    ///   1. RDMA008 rdma-port-errors (mlx5_1/1): link_downed saturated at 255: the link flapped at least 255 times since the counters were cleared, and further events are not counted; link_error_recovery 3 (times the link recovered from an error)
    ///      fix: find the failing link part (cable, transceiver, switch port); then clear the counters and watch whether they grow
    ///        mlxlink -d mlx5_1 -c -m   # physical counters, bit error rate and module
    ///        perfquery -C mlx5_1 -P 1 -R   # clear this port's counters
    /// ```
    pub static PORT_ERRORS_COUNTED = {
        id: "RDMA008",
        name: "rdma-port-errors",
        group: Rdma,
        severity: Error,
        requires: [MODULE_CHAIN],
        run: port_errors,
    };
}

fn port_errors(ctx: &Context<'_>) -> Vec<Outcome> {
    let devices = match &ctx.facts.rdma.devices {
        Err(gap) => return vec![Outcome::gap(gap)],
        Ok(Some(devices)) if !devices.is_empty() => devices,
        Ok(_) => return vec![no_devices(ctx)],
    };
    let mut outcomes = Vec::new();
    for device in devices {
        if let Err(gap) = &device.ports {
            outcomes.push(Outcome::gap(gap).subject(&device.name));
        }
    }
    outcomes.extend(ports(ctx).map(|(device, port)| judge_port(ctx, device, port)));
    if outcomes.is_empty() {
        return vec![Outcome::not_applicable("no rdma port (see RDMA004)")];
    }
    outcomes
}

/// What a problem is about, which decides the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// The physical link: cable, transceiver, switch port.
    Link,
    /// Packets lost on a RoCE fabric: PFC and ECN.
    Loss,
    /// Congestion notifications not acted on: DCQCN.
    Congestion,
    /// Receivers without posted buffers: the application.
    Receiver,
    /// Packets refused by a partition or raw-packet constraint, or subnet
    /// management packets dropped: the subnet's configuration.
    Subnet,
}

/// One problem a port's counters show.
struct Problem {
    status: Status,
    kind: Kind,
    text: String,
}

fn judge_port(ctx: &Context<'_>, device: &RdmaDevice, port: &RdmaPort) -> Outcome {
    let dir = device.port_dir(port.number);
    let name = port_name(device, port);
    let counters = match &port.counters {
        Err(gap) => return Outcome::gap(gap).subject(name),
        Ok(None) => {
            return Outcome::unknown(
                "port has neither counters/ nor hw_counters/: not captured, or the driver exposes none",
            )
            .subject(name)
            .evidence(format!("{dir}/counters"), "<missing>");
        }
        Ok(Some(counters)) => counters,
    };
    let mut problems = Vec::new();
    let mut evidence: Vec<(String, String)> = Vec::new();
    let mut note = |counter: &Counter, value: u64| {
        evidence.push((counter.path_in(&dir), value.to_string()));
    };
    for counter in PORT_ERRORS {
        let Some(value) = counters.get(&counter).filter(|v| *v > 0) else {
            continue;
        };
        note(&counter, value);
        let flapping = FLAP_COUNTERS.contains(&counter) && counter.is_saturated(value);
        problems.push(Problem {
            status: if flapping { Status::Fail } else { Status::Warn },
            kind: if SUBNET_ERRORS.contains(&counter) {
                Kind::Subnet
            } else {
                Kind::Link
            },
            text: if flapping {
                format!(
                    "{} saturated at {value}: the link flapped at least {value} times since the counters were cleared, and further events are not counted",
                    counter.file
                )
            } else {
                format!(
                    "{} {} ({})",
                    counter.file,
                    amount(&counter, value),
                    counter.help.to_lowercase()
                )
            },
        });
    }
    if let Some(problem) = symbol_errors(ctx, port, counters) {
        if let Some(value) = counters.get(&known::SYMBOL_ERROR) {
            note(&known::SYMBOL_ERROR, value);
        }
        problems.push(problem);
    }
    let receiver_short: Vec<String> = ROCE_RECEIVER_SHORT
        .iter()
        .filter_map(|c| counters.get(c).filter(|v| *v > 0).map(|v| (c, v)))
        .map(|(c, v)| {
            note(c, v);
            format!("{} {v}", c.file)
        })
        .collect();
    if !receiver_short.is_empty() {
        problems.push(Problem {
            status: Status::Warn,
            kind: Kind::Receiver,
            text: format!(
                "receivers without posted buffers ({}): the application, not the fabric, ran short",
                receiver_short.join(", ")
            ),
        });
    }
    if port.is_ethernet() {
        let lost: Vec<String> = ROCE_LOSS
            .iter()
            .filter_map(|c| counters.get(c).filter(|v| *v > 0).map(|v| (c, v)))
            .map(|(c, v)| {
                note(c, v);
                format!("{} {v}", c.file)
            })
            .collect();
        if !lost.is_empty() {
            problems.push(Problem {
                status: Status::Warn,
                kind: Kind::Loss,
                text: format!(
                    "packets lost on a fabric that should be lossless ({}): pfc or ecn is not holding, each loss costs a go-back-n retransmission",
                    lost.join(", ")
                ),
            });
        }
        problems.extend(congestion(counters, &mut note));
    }
    let worst = problems.iter().map(|p| p.status).max_by_key(|s| match s {
        Status::Fail => 2,
        Status::Warn => 1,
        _ => 0,
    });
    let mut outcome = match worst {
        // Nothing read is nothing judged: a driver without a performance
        // management agent answers `N/A (no PMA)` for every counter.
        None if counters.values.is_empty() => {
            if counters.unreadable.is_empty() {
                Outcome::unknown(
                    "no counter could be judged: the port's counter directories hold none of the counters judged",
                )
                .evidence(format!("{dir}/counters"), "<none of the judged counters>")
            } else {
                Outcome::unknown(
                    "no counter could be judged: no counter held a number (a driver without a performance management agent reads N/A (no PMA))",
                )
            }
        }
        None => {
            let read = counters.values.len();
            Outcome::pass(format!(
                "no error counted in {read} counters since they were cleared"
            ))
        }
        Some(status) => {
            let message = problems
                .iter()
                .map(|p| p.text.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            let kinds: Vec<Kind> = problems.iter().map(|p| p.kind).collect();
            Outcome::new(status, message).fix(fix(ctx, device, port, &kinds))
        }
    };
    for (path, value) in evidence {
        outcome = outcome.evidence(path, value);
    }
    if !counters.unreadable.is_empty() {
        outcome = outcome.evidence(
            format!("{dir}/counters"),
            format!("unreadable: {}", counters.unreadable.join(" ")),
        );
    }
    outcome.subject(name)
}

/// `3`, or `at least 15 (saturated)` for a counter at its maximum.
fn amount(counter: &Counter, value: u64) -> String {
    if counter.is_saturated(value) {
        format!("at least {value} (saturated)")
    } else {
        value.to_string()
    }
}

/// Symbol errors above a bit error rate of 10^-12 since boot, or saturated.
fn symbol_errors(ctx: &Context<'_>, port: &RdmaPort, counters: &PortCounters) -> Option<Problem> {
    let counter = known::SYMBOL_ERROR;
    let errors = counters.get(&counter).filter(|v| *v > 0)?;
    if counter.is_saturated(errors) {
        return Some(Problem {
            status: Status::Warn,
            kind: Kind::Link,
            text: format!(
                "symbol_error saturated at {errors}: the link's bit error rate cannot be judged any more"
            ),
        });
    }
    let uptime = ctx
        .facts
        .kernel
        .uptime_seconds
        .as_ref()
        .ok()
        .copied()
        .flatten()?;
    let gbps = port.rate.as_ref().ok()?.as_ref()?.gbps;
    // At most this many bits crossed the link since boot: it signals
    // continuously at its rate. Fewer bits only raise the error rate.
    #[expect(
        clippy::cast_precision_loss,
        reason = "uptimes and counts far below 2^52"
    )]
    let (errors_f, uptime_f) = (errors as f64, uptime as f64);
    let bits = gbps * 1e9 * uptime_f;
    #[expect(clippy::cast_precision_loss, reason = "10^12 is exact in an f64")]
    let limit = BER_LIMIT_RECIPROCAL as f64;
    (bits > 0.0 && errors_f * limit > bits).then(|| Problem {
        status: Status::Warn,
        kind: Kind::Link,
        text: format!(
            "symbol_error {errors} in at most {uptime} s at {gbps} Gb/s: a bit error rate of at least {:.1e}, above the 1e-12 a link must keep",
            errors_f / bits
        ),
    })
}

/// CNPs ignored by the reaction point, and ECN marks the notification
/// point never answered.
fn congestion(counters: &PortCounters, note: &mut impl FnMut(&Counter, u64)) -> Vec<Problem> {
    let mut problems = Vec::new();
    if let Some(ignored) = counters.get(&known::RP_CNP_IGNORED).filter(|v| *v > 0) {
        note(&known::RP_CNP_IGNORED, ignored);
        problems.push(Problem {
            status: Status::Warn,
            kind: Kind::Congestion,
            text: format!(
                "rp_cnp_ignored {ignored}: congestion notifications arrived and were ignored, so senders did not slow down (dcqcn's reaction point or ecn is off on the adapter)"
            ),
        });
    }
    if let (Some(marked), Some(0)) = (
        counters
            .get(&known::NP_ECN_MARKED_ROCE_PACKETS)
            .filter(|v| *v > 0),
        counters.get(&known::NP_CNP_SENT),
    ) {
        note(&known::NP_ECN_MARKED_ROCE_PACKETS, marked);
        note(&known::NP_CNP_SENT, 0);
        problems.push(Problem {
            status: Status::Warn,
            kind: Kind::Congestion,
            text: format!(
                "np_ecn_marked_roce_packets {marked} but np_cnp_sent 0: the notification point never told a sender to slow down (dcqcn's notification point is off)"
            ),
        });
    }
    problems
}

/// The fix for the kinds of problem found, the link's first.
fn fix(ctx: &Context<'_>, device: &RdmaDevice, port: &RdmaPort, kinds: &[Kind]) -> Remediation {
    let number = port.number.to_string();
    let netdev = port.netdev.as_deref().unwrap_or("<netdev>");
    let prio = ctx.profile.roce_priority.unwrap_or(DEFAULT_ROCE_PRIORITY);
    let mut summaries = Vec::new();
    let mut commands = Vec::new();
    if kinds.contains(&Kind::Link) {
        summaries.push("find the failing link part (cable, transceiver, switch port)");
        commands.push(format!(
            "{}   # physical counters, bit error rate and module",
            join(["mlxlink", "-d", &device.name, "-c", "-m"])
        ));
    }
    if kinds.contains(&Kind::Loss) {
        summaries.push("make the roce priority lossless end to end (pfc on the nic and every switch port) with dcqcn on");
        commands.push(format!(
            "{}   # pfc per priority on this nic",
            join(["mlnx_qos", "-i", netdev])
        ));
    }
    if kinds.contains(&Kind::Congestion) {
        summaries.push(
            "turn dcqcn's notification and reaction points on for the roce priority (QOS003)",
        );
        for point in ["roce_np", "roce_rp"] {
            commands.push(write_to(
                "1",
                &format!("/sys/class/net/{netdev}/ecn/{point}/enable/{prio}"),
            ));
        }
    }
    if kinds.contains(&Kind::Subnet) {
        summaries.push(
            "check the port's partition keys and the subnet manager's log (constraint errors and dropped vl15 packets are configuration, not cabling)",
        );
        commands.push(format!(
            "{}   # partition keys of this port",
            join(["cat", &format!("{}/pkeys/0", device.port_dir(port.number))])
        ));
    }
    if kinds.contains(&Kind::Receiver) {
        summaries
            .push("have the application post more receive buffers (larger receive queues, srq)");
    }
    summaries.push("then clear the counters and watch whether they grow");
    let mut fix = Remediation::new(summaries.join("; "));
    for command in commands {
        fix = fix.command(command);
    }
    fix.command(format!(
        "{}   # clear this port's counters",
        join(["perfquery", "-C", &device.name, "-P", &number, "-R"])
    ))
}
