//! Hostile host trees for the doctor: names read from the host that would
//! run as commands if a fix pasted them unquoted, and listings too large to
//! trust. Every doctor run here has its own time bound.

mod support;

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use zerohop_core::{Report, Status};
use zerohop_doctor::{Profile, Selection};
use zerohop_host::{Facts, HostRoot};

/// Runs the whole doctor on `root` with `profile`, failing the test when it
/// takes longer than a minute: a hang must fail, not stall the suite.
fn doctor_within(root: &Path, profile: Profile) -> Report {
    let root = root.to_path_buf();
    let (done, answer) = mpsc::channel();
    thread::spawn(move || {
        let host = HostRoot::at(&root).expect("a directory root");
        let facts = Facts::collect(&host);
        let _ = done.send(zerohop_doctor::run(&facts, &profile, &Selection::all()));
    });
    answer
        .recv_timeout(Duration::from_secs(60))
        .expect("the doctor finished within a minute")
}

fn fixture(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(case)
}

/// Host names that run a command when a shell reads them unquoted: command
/// substitution after a separator, backticks, a quote that closes a naive
/// quoting, a newline (a second command line), spaces with an operator,
/// and a terminal escape sequence. Each creates `pwned-*` in the shell's
/// working directory if it ever runs. None holds a `/`, so each can be a
/// file name in a host tree.
const HOSTILE: &[&str] = &[
    ";$(touch pwned-a)",
    "`touch pwned-b`",
    "'$(touch pwned-c)'",
    "\n$(touch pwned-d)",
    " $(touch pwned-e) && true",
    "\u{1b}]0;$(touch pwned-f)\u{7}",
];

/// What a name becomes in a tree: a path component or a symlink target
/// holds it as it is; `mountinfo`, `mountstats` and `fstab` hold it with
/// the octal escapes the kernel (and `getmntent(3)`) use.
fn escaped_for(file: &Path, text: &str) -> String {
    let octal = ["mountinfo", "mountstats", "fstab"]
        .iter()
        .any(|name| file.file_name().is_some_and(|n| n == *name));
    if !octal {
        return text.to_owned();
    }
    text.replace('\\', "\\134")
        .replace(' ', "\\040")
        .replace('\t', "\\011")
        .replace('\n', "\\012")
}

/// Copies the fixture `from` to `to`, appending `hostile` to every
/// occurrence of each name in `names`: in file and directory names, link
/// targets and file contents.
fn copy_renamed(from: &Path, to: &Path, names: &[&str], hostile: &str) {
    let rename = |text: &str, escape: &dyn Fn(&str) -> String| {
        names.iter().fold(text.to_owned(), |text, name| {
            text.replace(name, &format!("{name}{}", escape(hostile)))
        })
    };
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let source = entry.path();
        let target = to.join(rename(&name, &|h| h.to_owned()));
        let kind = entry.file_type().unwrap();
        if kind.is_symlink() {
            let link = fs::read_link(&source).unwrap();
            symlink(rename(&link.to_string_lossy(), &|h| h.to_owned()), &target).unwrap();
        } else if kind.is_dir() {
            copy_renamed(&source, &target, names, hostile);
        } else if name == "profile.json" {
            fs::copy(&source, &target).unwrap();
        } else {
            let text = fs::read_to_string(&source).unwrap();
            fs::write(&target, rename(&text, &|h| escaped_for(&source, h))).unwrap();
        }
    }
}

/// One shell word as a POSIX shell reads it: its text in the command, its
/// value after quote removal, and whether an expansion (`$…`, a backtick)
/// stayed outside single quotes, where the shell would run it.
#[derive(Debug)]
struct Word {
    source: String,
    value: String,
    expands: bool,
}

/// Splits a command line into words, the way a POSIX shell tokenises it:
/// blanks and operators separate words, `#` at the start of a word begins a
/// comment, `'…'`, `$'…'`, `"…"` and backslashes quote. Operators are not
/// returned: what matters is which words exist and what they hold.
fn words(command: &str) -> Result<Vec<Word>, String> {
    let chars: Vec<char> = command.chars().collect();
    let mut words = Vec::new();
    let mut index = 0;
    while index < chars.len() {
        let c = chars[index];
        if c == ' ' || c == '\t' || "&|;<>()".contains(c) {
            index += 1;
            continue;
        }
        if c == '#' {
            break;
        }
        let start = index;
        let mut value = String::new();
        let mut expands = false;
        while index < chars.len() {
            let c = chars[index];
            if c == ' ' || c == '\t' || "&|;<>()".contains(c) {
                break;
            }
            match c {
                '\\' => {
                    let next = chars.get(index + 1).ok_or("a trailing backslash")?;
                    value.push(*next);
                    index += 2;
                }
                '\'' => {
                    let end = chars[index + 1..]
                        .iter()
                        .position(|c| *c == '\'')
                        .ok_or("an unterminated single quote")?;
                    value.extend(&chars[index + 1..index + 1 + end]);
                    index += end + 2;
                }
                '$' if chars.get(index + 1) == Some(&'\'') => {
                    index += 2;
                    loop {
                        match chars.get(index) {
                            None => return Err("an unterminated $'…'".to_owned()),
                            Some('\'') => break,
                            Some('\\') => match chars.get(index + 1) {
                                Some('x') => {
                                    let hex: String = chars[index + 2..index + 4].iter().collect();
                                    let byte = u8::from_str_radix(&hex, 16)
                                        .map_err(|_| format!("a bad \\x escape {hex}"))?;
                                    value.push(char::from(byte));
                                    index += 4;
                                }
                                Some(other @ ('\\' | '\'' | '"')) => {
                                    value.push(*other);
                                    index += 2;
                                }
                                other => {
                                    return Err(format!("an unexpected escape {other:?} in $'…'"));
                                }
                            },
                            Some(c) => {
                                value.push(*c);
                                index += 1;
                            }
                        }
                    }
                    index += 1;
                }
                '"' => {
                    index += 1;
                    loop {
                        match chars.get(index) {
                            None => return Err("an unterminated double quote".to_owned()),
                            Some('"') => break,
                            Some('\\')
                                if matches!(chars.get(index + 1), Some('$' | '`' | '"' | '\\')) =>
                            {
                                value.push(chars[index + 1]);
                                index += 2;
                            }
                            Some(c) => {
                                expands |= *c == '$' || *c == '`';
                                value.push(*c);
                                index += 1;
                            }
                        }
                    }
                    index += 1;
                }
                '$' | '`' => {
                    expands = true;
                    value.push(c);
                    index += 1;
                }
                c => {
                    value.push(c);
                    index += 1;
                }
            }
        }
        words.push(Word {
            source: chars[start..index].iter().collect(),
            value,
            expands,
        });
    }
    Ok(words)
}

/// How bash reads `word` back, run in `dir`; `None` when bash is absent.
fn bash_reads(dir: &Path, word: &str) -> Option<String> {
    let output = Command::new("bash")
        .current_dir(dir)
        .arg("-c")
        .arg(format!("printf '%s' {word}"))
        .output()
        .ok()?;
    assert!(output.status.success(), "bash rejected {word}");
    Some(String::from_utf8(output.stdout).expect("utf-8"))
}

/// Every remediation command of `report`, with the check that gave it.
fn commands(report: &Report) -> Vec<(String, String)> {
    report
        .findings
        .iter()
        .flat_map(|finding| {
            finding
                .remediation
                .iter()
                .flat_map(|fix| fix.commands.iter())
                .map(|command| (finding.id.clone(), command.clone()))
        })
        .collect()
}

/// The fixtures whose fixes name host things, the names to make hostile,
/// and the check that must then give a fix naming them.
fn cases() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    let rdma = vec!["ens1f0", "mlx5_0"];
    vec![
        ("QOS001/fail-mtu-1500", rdma.clone(), "QOS001"),
        ("QOS003/fail-np-off", rdma.clone(), "QOS003"),
        ("QOS004/fail-roce-v1", rdma.clone(), "QOS004"),
        ("RDMA004/fail-port-init", rdma.clone(), "RDMA004"),
        ("RDMA006/fail-no-carrier", rdma.clone(), "RDMA006"),
        ("RDMA007/fail-only-roce-v1", rdma, "RDMA007"),
        ("GPU001/fail-bound-to-vfio", vec!["vfio-pci"], "GPU001"),
        (
            "NFS001/fail-fstab-asks-rdma",
            vec!["/mnt/data", "srv:/data"],
            "NFS001",
        ),
        (
            "NFS003/warn-transports-missing",
            vec!["/mnt/data"],
            "NFS003",
        ),
        (
            "NFS004/warn-32kib",
            vec!["/mnt/data", "srv:/data"],
            "NFS004",
        ),
        ("NFS006/warn-soft", vec!["/mnt/data", "srv:/data"], "NFS006"),
    ]
}

#[test]
fn fixes_keep_hostile_host_names_as_single_quoted_words() {
    let shell_dir = tempfile::tempdir().unwrap();
    for (case, names, check) in cases() {
        for hostile in HOSTILE {
            let dir = support::scratch();
            copy_renamed(&fixture(case), dir.path(), &names, hostile);
            let report = doctor_within(dir.path(), Profile::default());
            let commands = commands(&report);
            let marker = hostile.trim_start_matches(['\n', ' ', ';', '`', '\'', '\u{1b}']);
            let marker = &marker[..marker.find("pwned").unwrap() + 5];
            let named: Vec<&(String, String)> = commands
                .iter()
                .filter(|(_, command)| command.contains("pwned"))
                .collect();
            if *hostile == HOSTILE[0] {
                assert!(
                    named.iter().any(|(id, _)| id == check),
                    "{case}: {check} gave no fix naming the renamed thing: {commands:#?}"
                );
            }
            for (id, command) in named {
                let shown = format!("{case} {hostile:?}: {id}: {command:?}");
                assert!(
                    !command.chars().any(char::is_control),
                    "{shown}: a raw control character in a command"
                );
                let words = words(command).unwrap_or_else(|err| panic!("{shown}: {err}"));
                for word in words.iter().filter(|w| w.value.contains("pwned")) {
                    assert!(
                        !word.expands,
                        "{shown}: `{}` leaves an expansion to the shell",
                        word.source
                    );
                    let whole = names
                        .iter()
                        .any(|name| word.value.contains(&format!("{name}{hostile}")));
                    assert!(
                        whole,
                        "{shown}: `{}` does not hold a whole hostile name",
                        word.source
                    );
                    if let Some(read) = bash_reads(shell_dir.path(), &word.source) {
                        assert_eq!(read, word.value, "{shown}: bash reads `{}`", word.source);
                    }
                }
                // Anything that still names the marker outside a word (a
                // comment) must not have lost its quoting either.
                assert!(
                    words.iter().any(|w| w.value.contains(marker)) || command.contains('#'),
                    "{shown}: the hostile name is split across words"
                );
            }
        }
    }
    let ran: Vec<_> = fs::read_dir(shell_dir.path()).unwrap().collect();
    assert!(ran.is_empty(), "bash ran a hostile name: {ran:?}");
}

#[test]
fn the_word_oracle_agrees_with_bash() {
    // The tokeniser above is only an oracle if it reads words as bash does.
    let dir = tempfile::tempdir().unwrap();
    for word in [
        "plain",
        "'single quoted; $(x)'",
        "$'ansi\\x0a\\x1b\\'q'",
        "\"double $HOME\"",
        "back\\ slash",
        "a'b'\"c\"$'d'",
    ] {
        let parsed = words(word).unwrap();
        assert_eq!(parsed.len(), 1, "{word}");
        if parsed[0].expands {
            continue;
        }
        if let Some(read) = bash_reads(dir.path(), word) {
            assert_eq!(read, parsed[0].value, "{word}");
        }
    }
    let split = words("umount '/mnt/a b' && mount -t nfs4 x /y   # comment $(x)").unwrap();
    let values: Vec<&str> = split.iter().map(|w| w.value.as_str()).collect();
    assert_eq!(
        values,
        ["umount", "/mnt/a b", "mount", "-t", "nfs4", "x", "/y"]
    );
    assert!(words("echo $(touch x)").unwrap()[1].expands);
}

#[test]
fn a_capped_pci_listing_makes_gpu_and_pci_checks_unknown() {
    let dir = support::scratch();
    let devices = dir.path().join("sys/bus/pci/devices");
    fs::create_dir_all(&devices).unwrap();
    fs::create_dir_all(dir.path().join("proc")).unwrap();
    for index in 0..=zerohop_host::root::MAX_DIR_ENTRIES {
        fs::File::create(devices.join(format!("{index:05x}"))).unwrap();
    }
    let report = doctor_within(dir.path(), Profile::default());
    for finding in report
        .findings
        .iter()
        .filter(|f| f.group == "gpu" || f.group == "pcie")
    {
        assert_eq!(
            finding.status,
            Status::Unknown,
            "{}: {} (a capped listing is no proof of absence)",
            finding.id,
            finding.message
        );
        assert!(
            finding.message.contains("more than 65536 entries"),
            "{}: {}",
            finding.id,
            finding.message
        );
    }
}

#[test]
fn a_gpu_whose_class_cannot_be_read_is_unknown_not_absent() {
    let dir = support::scratch();
    copy_renamed(&fixture("GPU001/pass-bound-to-nvidia"), dir.path(), &[], "");
    let class = dir
        .path()
        .join("sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:00.0/0000:1b:00.0/class");
    fs::remove_file(&class).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &class,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .unwrap();
    let report = doctor_within(dir.path(), Profile::default());
    for finding in report.findings.iter().filter(|f| f.group == "gpu") {
        assert_eq!(
            finding.status,
            Status::Unknown,
            "{}: {} (a function that may be a gpu is no proof of none)",
            finding.id,
            finding.message
        );
        assert!(finding.message.contains("is a fifo"), "{}", finding.message);
    }
}
