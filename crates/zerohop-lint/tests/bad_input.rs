//! Bad inputs give a clear error with file and position, and the other
//! inputs of the run are still linted.

use zerohop_core::Status;
use zerohop_lint::{Input, NotRead, Options, lint};

fn input(name: &str, bytes: impl Into<Vec<u8>>) -> Input {
    Input {
        name: name.to_owned(),
        content: Ok(bytes.into()),
    }
}

fn alias_bomb() -> String {
    let mut text = String::from(
        "apiVersion: v1\nkind: ConfigMap\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n",
    );
    for level in 1..12 {
        let previous = format!("*l{}", level - 1);
        let items = [previous.as_str(); 9].join(", ");
        text.push_str(&format!("l{level}: &l{level} [{items}]\n"));
    }
    text
}

#[test]
fn bad_inputs_are_reported_and_the_rest_is_linted() {
    let good = "apiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: my-policy\nspec: {}\n";
    let mut huge = b"apiVersion: v1\nkind: ConfigMap\ndata:\n".to_vec();
    huge.resize(50 * 1024 * 1024, b' ');
    let inputs = vec![
        input("good.yaml", good),
        input(
            "tabs.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata:\n\tname: x\n",
        ),
        input(
            "broken.yaml",
            "apiVersion: v1\nkind: Pod\nmetadata: {name: [x\n",
        ),
        input(
            "binary.yaml",
            [0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0xff, 0xfe, 0x00],
        ),
        input("bomb.yaml", alias_bomb()),
        input("huge.yaml", huge),
        Input {
            name: "missing.yaml".to_owned(),
            content: Err(NotRead::Failed(
                "No such file or directory (os error 2)".to_owned(),
            )),
        },
    ];
    let outcome = lint(&inputs, &Options::default());
    assert_eq!(outcome.invalid_inputs, 6);

    let invalid = |file: &str| {
        outcome
            .findings
            .iter()
            .find(|f| f.id == "ZL001" && f.location.as_ref().is_some_and(|l| l.file == file))
            .unwrap_or_else(|| panic!("no ZL001 for {file}: {:#?}", outcome.findings))
    };
    let tabs = invalid("tabs.yaml");
    assert_eq!(tabs.location.as_ref().map(|l| l.line), Some(4));
    assert!(tabs.message.contains("tab"), "{}", tabs.message);
    assert!(invalid("broken.yaml").message.starts_with("invalid YAML"));
    assert!(invalid("binary.yaml").message.contains("not UTF-8 text"));
    let bomb = invalid("bomb.yaml");
    assert!(bomb.message.contains("alias"), "{}", bomb.message);
    assert!(bomb.location.as_ref().is_some_and(|l| l.line > 3));
    assert!(invalid("huge.yaml").message.contains("larger than"));
    assert!(
        invalid("missing.yaml")
            .message
            .contains("cannot read input")
    );
    assert!(
        outcome
            .findings
            .iter()
            .all(|f| f.id != "ZL001" || f.status == Status::Fail)
    );

    // The good file is linted in the same run.
    assert!(
        outcome.findings.iter().any(|f| f.id == "ZL030"),
        "{:#?}",
        outcome.findings
    );
}

#[test]
fn non_kubernetes_documents_are_skipped_with_a_note() {
    let inputs = vec![input(
        "settings.yaml",
        "replicaCount: 2\nimage:\n  tag: v1\n",
    )];
    let outcome = lint(&inputs, &Options::default());
    assert_eq!(outcome.invalid_inputs, 0);
    let ids: Vec<&str> = outcome.findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids, ["ZL006"]);
    assert_eq!(outcome.findings[0].status, Status::Info);
}

#[test]
fn helm_values_files_are_read_as_values_without_a_note() {
    let inputs = vec![input("values.yaml", "replicaCount: 2\nimage:\n  tag: v1\n")];
    let outcome = lint(&inputs, &Options::default());
    assert_eq!(outcome.invalid_inputs, 0);
    assert_eq!(outcome.findings, Vec::new());
}

#[test]
fn lists_and_multi_document_streams_are_expanded() {
    let text = "apiVersion: v1\nkind: List\nitems:\n  - apiVersion: mellanox.com/v1alpha1\n    kind: NicClusterPolicy\n    metadata:\n      name: a\n---\napiVersion: mellanox.com/v1alpha1\nkind: NicClusterPolicy\nmetadata:\n  name: b\n";
    let outcome = lint(&[input("list.yaml", text)], &Options::default());
    let names: Vec<&str> = outcome
        .findings
        .iter()
        .filter(|f| f.id == "ZL030")
        .filter_map(|f| Some(f.object.as_ref()?.name.as_str()))
        .collect();
    assert_eq!(names, ["a", "b"]);
}
