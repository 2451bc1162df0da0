//! One small hand-written capture per judgement that shows its problem,
//! a check that every declared judgement has one, and that each
//! judgement's `## Example` shows one of them and what it gives.

mod support;

use std::collections::BTreeSet;

use support::{judge, judge_with, line, of, one};
use zerohop_core::render::human;
use zerohop_core::{Finding, Status};
use zerohop_validate::judge::{Expectations, JUDGEMENTS, LinkLayer, PlannedFabric};
use zerohop_validate::nccl::collective::Collective;

/// Each fixture: a name, its text, expectations, and the judgement ID with
/// the problem status it must show, at the line it must cite.
struct Fixture {
    name: &'static str,
    text: &'static str,
    expectations: Expectations,
    id: &'static str,
    status: Status,
    line: Option<u32>,
    says: &'static str,
}

fn fixture(
    name: &'static str,
    text: &'static str,
    id: &'static str,
    status: Status,
    line: Option<u32>,
    says: &'static str,
) -> Fixture {
    Fixture {
        name,
        text,
        expectations: Expectations::default(),
        id,
        status,
        line,
        says,
    }
}

const NCCL_TABLE: &str = "\
# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  1 on node-a device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  2 on node-b device  0 [0000:1b:00] NVIDIA H100 80GB HBM3
#
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1    100.0   10.00   10.00      0    100.0   10.00   10.00      0
  1073741824     268435456     float     sum      -1    30000   35.00   35.00      0    30000   35.00   35.00      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 22.5
#
# Collective test concluded: all_reduce_perf
";

fn fixtures() -> Vec<Fixture> {
    vec![
        fixture(
            "cut.log",
            "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n  8  2  float  sum  -1  1.0  0.1  0.1  0  1.0  0.1  0.1  0\n",
            "VAL001",
            Status::Warn,
            Some(2),
            "could not be read",
        ),
        fixture(
            "socket.log",
            "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\nh:1:2 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.\nh:1:2 [0] NCCL INFO Using network Socket\nh:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/Socket/0\n",
            "VAL101",
            Status::Fail,
            Some(4),
            "NET/Socket",
        ),
        fixture(
            "nodevice.log",
            "h:1:2 [0] NCCL INFO NET/IB : No device found.\n",
            "VAL102",
            Status::Fail,
            Some(1),
            "No device found",
        ),
        fixture(
            "nomodule.log",
            "h:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n",
            "VAL103",
            Status::Fail,
            Some(1),
            "no peer-memory module",
        ),
        fixture(
            "distance.log",
            "h:1:2 [0] NCCL INFO NCCL version 2.21.5+cuda12.4\nh:1:2 [0] NCCL INFO GPU Direct RDMA Disabled for GPU 17000 / HCA 0 (distance 6 > 4)\n",
            "VAL104",
            Status::Warn,
            Some(2),
            "path PHB (6) is beyond NCCL_NET_GDR_LEVEL PXB (4)",
        ),
        fixture(
            "nogdr.log",
            "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\nh:1:2 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1\n",
            "VAL105",
            Status::Fail,
            Some(2),
            "1 of 2 channel connection(s) stage data in host memory",
        ),
        fixture(
            "locprot.log",
            "h:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1> with error 4, opcode 0, len 0, vendor err 81 (Send) localGid ::ffff:10.0.0.1 remoteGid ::ffff:10.0.0.2\n",
            "VAL106",
            Status::Fail,
            Some(1),
            "local protection error",
        ),
        fixture(
            "warn.log",
            "h:1:2 [0] misc/ibvwrap.cc:106 NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n",
            "VAL107",
            Status::Warn,
            Some(1),
            "ibv_reg_mr",
        ),
        fixture(
            "wrong.log",
            "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n  8  2  float  sum  -1  1.0  0.1  0.1  3  1.0  0.1  0.1  0\n# Out of bounds values : 3 FAILED\n# Avg bus bandwidth    : 0.1\n",
            "VAL108",
            Status::Fail,
            Some(2),
            "3 wrong element(s)",
        ),
        Fixture {
            expectations: Expectations {
                link_rate_gbps: Some(400.0),
                rails: Some(2),
                ..Expectations::default()
            },
            ..fixture(
                "slow.log",
                NCCL_TABLE,
                "VAL109",
                Status::Fail,
                Some(11),
                "35.00 GB/s at 1 GiB is 35% of the 100.0 GB/s",
            )
        },
        fixture(
            "aborted.log",
            "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n  8  2  float  sum  -1  1.0  0.1  0.1  0  1.0  0.1  0.1  0\n",
            "VAL110",
            Status::Fail,
            Some(2),
            "without its summary",
        ),
        fixture(
            "collapse.log",
            "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n  1048576  262144  float  sum  -1  1.0  40.0  40.0  0  1.0  40.0  40.0  0\n  1073741824  268435456  float  sum  -1  1.0  4.0  4.0  0  1.0  4.0  4.0  0\n# Avg bus bandwidth    : 20\n",
            "VAL111",
            Status::Warn,
            Some(2),
            "bandwidth collapses",
        ),
        Fixture {
            expectations: Expectations {
                link_rate_gbps: Some(400.0),
                ..Expectations::default()
            },
            ..fixture(
                "bw.txt",
                " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000           150.00             150.00              0.28\n",
                "VAL201",
                Status::Fail,
                Some(2),
                "38% of the 400.0 Gb/s link",
            )
        },
        fixture(
            "lat.txt",
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n 2       1000          1.00           90.00        2.00               3.00           4.00            9.00                   80.00\n",
            "VAL202",
            Status::Warn,
            Some(2),
            "40 times the median",
        ),
        fixture(
            "host.txt",
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000           150.00             150.00              0.28\n",
            "VAL203",
            Status::Info,
            None,
            "host memory",
        ),
        fixture(
            "nosrv.txt",
            "Couldn't connect to 10.0.0.2:18515\nUnable to open file descriptor for socket connection\n",
            "VAL204",
            Status::Fail,
            Some(1),
            "no server answered",
        ),
        fixture(
            "mtu.txt",
            "                    RDMA_Write BW Test\n Mtu             : 1024[B]\n Link type       : Ethernet\n #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000           90.00             90.00              0.28\n",
            "VAL205",
            Status::Warn,
            Some(2),
            "path MTU 1024 bytes",
        ),
        fixture(
            "gid.txt",
            "                    RDMA_Write BW Test\n Link type       : Ethernet\n local address: LID 0000 QPN 0x0093 PSN 0xbf9bfe\n GID: 254:128:00:00:00:00:00:00:12:176:16:255:254:52:10:173\n #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536      5000           90.00             90.00              0.28\n",
            "VAL206",
            Status::Warn,
            Some(4),
            "link-local",
        ),
        fixture(
            "topo.txt",
            "        GPU0    NIC0    CPU Affinity    NUMA Affinity\nGPU0     X      PHB     0-31    0\nNIC0    PHB      X\n\nNIC Legend:\n\n  NIC0: mlx5_0\n",
            "VAL301",
            Status::Warn,
            Some(2),
            "mlx5_0 is PHB away",
        ),
        fixture(
            "gdscheck-fail.txt",
            " GDS release version: 1.13.1.3\n GPU index 0 Tesla T4 bar:1 bar size (MiB):256 does not support GDS\n IOMMU: enabled\n Platform verification error\n",
            "VAL401",
            Status::Fail,
            Some(4),
            "did not succeed",
        ),
        fixture(
            "gdscheck-gpu.txt",
            " GDS release version: 1.13.1.3\n GPU index 0 Tesla T4 bar:1 bar size (MiB):256 does not support GDS\n Platform verification succeeded\n",
            "VAL402",
            Status::Fail,
            Some(2),
            "Tesla T4 does not support GDS",
        ),
        fixture(
            "gdscheck-iommu.txt",
            " GDS release version: 1.13.1.3\n IOMMU: enabled\n Platform verification succeeded\n",
            "VAL403",
            Status::Warn,
            Some(2),
            "IOMMU is enabled",
        ),
        fixture(
            "gdscheck-compat.txt",
            " GDS release version: 1.13.1.3\n properties.use_compat_mode : true\n Platform verification succeeded\n",
            "VAL404",
            Status::Info,
            Some(2),
            "compatibility mode is on",
        ),
        fixture(
            "gdscheck-backends.txt",
            " GDS release version: 1.13.1.3\n NVMe               : Unsupported\n NFS                : Unsupported\n Platform verification succeeded\n",
            "VAL405",
            Status::Info,
            Some(2),
            "supported: none",
        ),
        fixture(
            "gdsio-slow.txt",
            "IoType: READ XferType: GPUD Threads: 1 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 2.0 GiB/sec, Avg_Latency: 1.0 usecs ops: 1 total_time 1 secs\nIoType: READ XferType: CPUONLY Threads: 1 DataSetSize: 1/1(KiB) IOSize: 1024(KiB) Throughput: 10.0 GiB/sec, Avg_Latency: 1.0 usecs ops: 1 total_time 1 secs\n",
            "VAL406",
            Status::Warn,
            Some(1),
            "the direct path is broken or far",
        ),
        fixture(
            "verify.txt",
            "   gpu index :0,file :/mnt/test, io_requested :1048576,\n   Data Verification Failed\n",
            "VAL407",
            Status::Fail,
            Some(2),
            "data verification failed",
        ),
        fixture(
            "stats.txt",
            "GDS Version: 1.14.0.31\nNVFS statistics(ver: 4.0)\nIO stats: Enabled, peer IO stats: Disabled\nReads                : err=2 io_state_err=0\nBar1-map             : n=1 ok=0 err=1 free=1\n",
            "VAL408",
            Status::Warn,
            Some(4),
            "Reads err=2",
        ),
        fixture(
            "gids.txt",
            "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\nmlx5_0\t1\t0\tfe80:0000:0000:0000:0ac0:ebff:fe21:03da\t\t\tv1\trdma0\n",
            "VAL501",
            Status::Fail,
            Some(2),
            "no RoCE v2 GID",
        ),
        fixture(
            "tcp.log",
            "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n#  Rank  0 Group  0 Pid  1 on node-a device  0 [0000:61:00] NVIDIA L40S\n#  Rank  1 Group  0 Pid  2 on node-b device  0 [0000:61:00] NVIDIA L40S\n#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n     1048576        262144     float     sum      -1    166.4    6.30    6.30      0    167.9    6.24    6.24      0\n  1073741824     268435456     float     sum      -1   134471    7.98    7.98      0   134020    8.01    8.01      0\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 7.1\n",
            "VAL112",
            Status::Warn,
            Some(9),
            "slowest RDMA link taken for Ada Lovelace",
        ),
        Fixture {
            expectations: Expectations {
                planned: Some(PlannedFabric {
                    source: "intent cluster.yaml, pool h100".to_owned(),
                    rails: 2,
                    gpus_per_node: Some(1),
                    link_layer: Some(LinkLayer::Ethernet),
                    link_rate_gbps: None,
                }),
                ..Expectations::default()
            },
            ..fixture(
                "ib-for-roce.log",
                "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 2 localRanks 1 localRank 0 MNNVL 0\nh:1:2 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>\n",
                "VAL113",
                Status::Fail,
                Some(2),
                "the plan has RoCE rails (intent cluster.yaml, pool h100), NCCL used mlx5_0:1/IB mlx5_1:1/IB",
            )
        },
        fixture(
            "mounts.txt",
            "10.0.0.1:/data on /data type nfs4 (rw,vers=4.1,proto=tcp,port=2049)\n",
            "VAL502",
            Status::Info,
            Some(1),
            "over tcp",
        ),
    ]
}

#[test]
fn each_fixture_shows_its_problem_at_its_line() {
    for fixture in fixtures() {
        let findings = judge_with(fixture.name, fixture.text, &fixture.expectations);
        let found = of(&findings, fixture.id);
        let hit = found
            .iter()
            .find(|f| f.status == fixture.status)
            .unwrap_or_else(|| {
                panic!(
                    "{} ({}): no {} finding in {found:#?}",
                    fixture.id, fixture.name, fixture.status
                )
            });
        assert!(
            hit.message.contains(fixture.says),
            "{}: {}",
            fixture.id,
            hit.message
        );
        match fixture.line {
            Some(at) => assert_eq!(line(hit), at, "{}", fixture.id),
            None => assert!(hit.location.is_none(), "{}", fixture.id),
        }
    }
}

#[test]
fn every_judgement_has_a_fixture_showing_its_problem() {
    let covered: BTreeSet<&str> = fixtures()
        .iter()
        .filter(|f| {
            f.status
                == JUDGEMENTS
                    .iter()
                    .find(|j| j.info.id == f.id)
                    .unwrap()
                    .info
                    .severity
                    .status()
        })
        .map(|f| f.id)
        .collect();
    for judgement in JUDGEMENTS {
        assert!(
            covered.contains(judgement.info.id),
            "{} ({}) has no fixture showing its problem",
            judgement.info.id,
            judgement.info.name
        );
    }
}

#[test]
fn a_fixture_that_passes_passes() {
    let findings = judge_with(
        "good.log",
        NCCL_TABLE,
        &Expectations {
            link_rate_gbps: Some(200.0),
            rails: Some(1),
            collective: Some(Collective::AllReduce),
            ..Expectations::default()
        },
    );
    // Line 11: 35.00 GB/s of one 200 Gb/s rail (25 GB/s): 140%.
    let busbw = one(&findings, "VAL109");
    assert_eq!((busbw.status, line(busbw)), (Status::Pass, 11));
    assert_eq!(one(&findings, "VAL108").status, Status::Pass);
    assert_eq!(one(&findings, "VAL110").status, Status::Pass);
    // One 400 Gb/s rail (50 GB/s): 70% warns at the default 80%, and a
    // lower --min-efficiency turns it into a pass.
    let strict = judge_with(
        "slow.log",
        NCCL_TABLE,
        &Expectations {
            link_rate_gbps: Some(400.0),
            rails: Some(1),
            ..Expectations::default()
        },
    );
    assert_eq!(one(&strict, "VAL109").status, Status::Warn);
    let lenient = judge_with(
        "slow.log",
        NCCL_TABLE,
        &Expectations {
            link_rate_gbps: Some(400.0),
            rails: Some(1),
            min_efficiency: 0.6,
            ..Expectations::default()
        },
    );
    assert_eq!(one(&lenient, "VAL109").status, Status::Pass);
}

#[test]
fn without_expectations_bandwidth_is_only_reported() {
    let findings = judge("plain.log", NCCL_TABLE);
    let busbw = one(&findings, "VAL109");
    assert_eq!(busbw.status, Status::Info);
    assert!(busbw.message.contains("--rails"), "{}", busbw.message);
}

/// `findings` as `zerohop validate parse` shows them, without colour and
/// without the summary line.
fn human(findings: Vec<Finding>) -> String {
    human::as_documented("validate", findings)
}

/// The fixture the judgement's `## Example` names, and its two `text`
/// blocks: the capture, then what `zerohop validate parse` says of it.
fn example(docs: &str) -> Option<(&str, &str, &str)> {
    let example = &docs[docs.find("## Example")?..];
    let name_start = example.find("The capture `")? + "The capture `".len();
    let name_end = name_start + example[name_start..].find('`')?;
    let mut blocks = example.split("```text\n").skip(1);
    let capture = blocks.next()?.split("\n```").next()?;
    let output = blocks.next()?.split("\n```").next()?;
    Some((&example[name_start..name_end], capture, output))
}

#[test]
fn every_example_shows_what_its_fixture_gives() {
    // The documentation shows a fixture's real capture and findings, so
    // that a changed message cannot leave a stale example behind.
    let fixtures = fixtures();
    let mut failures = Vec::new();
    for judgement in JUDGEMENTS {
        let id = judgement.info.id;
        let Some((name, capture, shown)) = example(judgement.info.docs) else {
            failures.push(format!("{id}: no capture and output under ## Example"));
            continue;
        };
        let Some(fixture) = fixtures.iter().find(|f| f.id == id && f.name == name) else {
            failures.push(format!("{id}: no fixture {name} of this judgement"));
            continue;
        };
        if capture != fixture.text.trim_end() {
            failures.push(format!("{id}: the example's capture is not {name}"));
        }
        let given = human(of_owned(
            judge_with(fixture.name, fixture.text, &fixture.expectations),
            id,
        ));
        if given != shown {
            failures.push(format!(
                "{id}: the example of {name} shows\n{shown}\nbut it gives\n{given}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The findings of judgement `id`, owned.
fn of_owned(findings: Vec<Finding>, id: &str) -> Vec<Finding> {
    findings.into_iter().filter(|f| f.id == id).collect()
}
