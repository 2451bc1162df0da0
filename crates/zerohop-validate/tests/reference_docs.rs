//! The judgement reference at the end of `docs/validate.md` is generated
//! from the declarations. This test fails when it is stale;
//! `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-validate --test reference_docs`
//! rewrites it (the rest of the file is written by hand and kept).

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use zerohop_validate::judge::{Group, JUDGEMENTS};

const START: &str = "<!-- judgements:start";
const END: &str = "<!-- judgements:end -->";

fn render() -> String {
    let mut out = String::new();
    out.push_str("\n| ID | name | group | severity | summary |\n|---|---|---|---|---|\n");
    for judgement in JUDGEMENTS {
        let info = &judgement.info;
        let _ = writeln!(
            out,
            "| [{}](#{}) | `{}` | {} | {} | {} |",
            info.id,
            info.id.to_lowercase(),
            info.name,
            info.group,
            info.severity,
            info.summary()
        );
    }
    for group in Group::ALL {
        let judgements: Vec<_> = JUDGEMENTS.iter().filter(|j| j.group == group).collect();
        let _ = writeln!(out, "\n### Group `{}`", group.name());
        for judgement in judgements {
            let info = &judgement.info;
            let _ = writeln!(out, "\n#### {}\n", info.id);
            let _ = writeln!(out, "`{}` · severity `{}`\n", info.name, info.severity);
            // Below the judgement's own heading.
            out.push_str(&info.docs_at_level(5));
        }
    }
    out
}

#[test]
fn judgement_reference_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/validate.md");
    let committed = fs::read_to_string(&path).expect("docs/validate.md");
    let start = committed.find(START).expect("the start marker");
    let start = start
        + committed[start..]
            .find('\n')
            .expect("a line after the start marker")
        + 1;
    let end = committed.find(END).expect("the end marker");
    assert!(start <= end, "the markers are out of order");
    let fresh = format!("{}{}{}", &committed[..start], render(), &committed[end..]);
    if std::env::var_os("ZEROHOP_UPDATE_DOCS").is_some() {
        fs::write(&path, fresh).unwrap();
        return;
    }
    assert!(
        committed == fresh,
        "docs/validate.md is stale: run `ZEROHOP_UPDATE_DOCS=1 cargo test -p zerohop-validate --test reference_docs`"
    );
}
